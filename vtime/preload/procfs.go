package preload

import (
	"strconv"
	"syscall"
)

// alive reports whether a thread or process id exists (/proc lists thread ids too).
func alive(id int) bool {
	var st syscall.Stat_t
	return syscall.Stat("/proc/"+strconv.Itoa(id), &st) == nil
}
