package proc

import "bytes"

// StatusValue returns the value of key's line in a /proc/PID/status text ("Tgid" in
// "Tgid:\t42" gives "42"), trimmed of spaces and tabs; nil when no line has that key.
func StatusValue(status []byte, key string) []byte {
	for line := range bytes.Lines(status) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && string(k) == key {
			return bytes.TrimSpace(v)
		}
	}
	return nil
}
