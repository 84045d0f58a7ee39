# The code the tracer writes over a tracee's vDSO __vdso_clock_gettime (vclock_linux_amd64.go
# holds its bytes; TestVClockCodeMatchesSource assembles this file and compares). It answers
# clock_gettime, gettimeofday and time from the virtual wall time the tracer keeps in the
# block's data words, with no system call; what it cannot answer (a CPU-time clock, a
# timezone, a NULL buffer, data that stays mid-update) it passes to the kernel, which the
# seccomp filter traps as before. Each entry is position independent (RIP-relative data).
#
# Data: gen counts the tracer's writes, odd while one is under way; pub is the virtual wall
# time in nanoseconds; mono and tai are what CLOCK_MONOTONIC and CLOCK_TAI add to it.

	.intel_syntax noprefix
	.text

# LOADNS: rax = pub, read between two equal even values of gen; jumps to \fallback after
# 100000 tries (a page the tracer stopped writing to mid-update).
.macro LOADNS fallback
	mov r8d, 100000
1:	dec r8d
	jz \fallback
	movzx r10d, byte ptr [rip + gen]
	test r10d, 1
	jnz 1b
	mov rax, qword ptr [rip + pub]
	movzx r11d, byte ptr [rip + gen]
	cmp r10d, r11d
	jne 1b
.endm

clock_gettime:				# (clockid_t edi, struct timespec *rsi)
	test rsi, rsi
	jz cg_sys
	cmp edi, 11			# CLOCK_TAI
	je cg_tai
	cmp edi, 9			# negative ids (CPU clocks of other processes) are above 9 too
	ja cg_sys
	mov eax, 0x121			# REALTIME, REALTIME_COARSE, REALTIME_ALARM
	bt eax, edi
	jc cg_real
	mov eax, 0x2d2			# MONOTONIC, _RAW, _COARSE, BOOTTIME, BOOTTIME_ALARM
	bt eax, edi
	jnc cg_sys
	mov r9, qword ptr [rip + mono]
	jmp cg_read
cg_tai:
	mov r9, qword ptr [rip + tai]
	jmp cg_read
cg_real:
	xor r9d, r9d
cg_read:
	LOADNS cg_sys
	add rax, r9
	xor edx, edx
	mov ecx, 1000000000
	div rcx
	mov qword ptr [rsi], rax
	mov qword ptr [rsi + 8], rdx
	xor eax, eax
	ret
cg_sys:
	mov eax, 228			# SYS_clock_gettime
	syscall
	ret

gettimeofday:				# (struct timeval *rdi, struct timezone *rsi)
	test rsi, rsi
	jnz gtod_sys
	test rdi, rdi
	jz gtod_done
	LOADNS gtod_sys
	xor edx, edx
	mov ecx, 1000000000
	div rcx
	mov qword ptr [rdi], rax
	mov rax, rdx
	xor edx, edx
	mov ecx, 1000
	div rcx
	mov qword ptr [rdi + 8], rax
gtod_done:
	xor eax, eax
	ret
gtod_sys:
	mov eax, 96			# SYS_gettimeofday
	syscall
	ret

time:					# (time_t *rdi)
	LOADNS time_sys
	xor edx, edx
	mov ecx, 1000000000
	div rcx
	test rdi, rdi
	jz time_done
	mov qword ptr [rdi], rax
time_done:
	ret
time_sys:
	mov eax, 201			# SYS_time
	syscall
	ret

	.balign 64			# data on a cache line of its own, away from the code
gen:	.byte 0
	.balign 8
pub:	.quad 0
mono:	.quad 0
tai:	.quad 0
