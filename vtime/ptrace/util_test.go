package ptrace

import "strconv"

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
func parseInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
