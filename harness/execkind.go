package harness

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
)

// ExecKind is what a shell tool's executable is, which decides how its time can be
// virtualised.
type ExecKind uint8

const (
	// ExecScript: a script, a shell builtin or loop, or a dynamically linked program: the
	// LD_PRELOAD library (or faketime) reaches it and every process it starts.
	ExecScript ExecKind = iota
	// ExecGo: a Go binary; it reads the time through the vDSO and sleeps in raw system calls,
	// so neither LD_PRELOAD nor faketime reaches it, linked statically or not.
	ExecGo
	// ExecStatic: a statically linked ELF (no program interpreter): the dynamic loader that
	// reads LD_PRELOAD never runs.
	ExecStatic
)

var execKindNames = [...]string{ExecScript: "script or dynamic", ExecGo: "Go binary", ExecStatic: "static binary"}

func (k ExecKind) String() string {
	if int(k) < len(execKindNames) {
		return execKindNames[k]
	}
	return "exec kind ?"
}

// Bypasses reports whether the kind ignores LD_PRELOAD and faketime.
func (k ExecKind) Bypasses() bool { return k == ExecGo || k == ExecStatic }

// DetectExec finds the executable a rendered command starts (its first word, after variable
// assignments and a leading exec, env or command; looked up on path) and says what it is.
// A command that starts with a shell keyword, a builtin, `sh -c` or anything not found is
// ExecScript: only a command's first program is inspected, never what a script runs.
func DetectExec(command, path string) (exe string, kind ExecKind) {
	word := firstProgram(command)
	if word == "" {
		return "", ExecScript
	}
	exe = word
	if !strings.Contains(word, "/") {
		p, err := lookPath(word, path)
		if err != nil {
			return "", ExecScript
		}
		exe = p
	}
	return exe, classify(exe)
}

// firstProgram is the first word of command that names a program, or "" when the command
// does not start with one a plain split can find (quotes, a compound command).
func firstProgram(command string) string {
	for _, w := range strings.Fields(command) {
		switch {
		case w == "exec" || w == "env" || w == "command":
			continue
		case strings.ContainsAny(w, "'\"`$(){};|&<>"):
			return ""
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "="):
			continue // VAR=value
		}
		return w
	}
	return ""
}

func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if _, err := exec.LookPath(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("not found")
}

// classify reads an executable's headers: a Go build-info note, or no PT_INTERP.
func classify(exe string) ExecKind {
	if _, err := buildinfo.ReadFile(exe); err == nil {
		return ExecGo
	}
	f, err := elf.Open(exe)
	if err != nil {
		return ExecScript // a script (#!), or unreadable: the shell reports that
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return ExecScript
		}
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return ExecScript
	}
	return ExecStatic
}
