package proc

// Line is a /proc/PID/stat text split after the command name, without allocating: the clock's
// idle checks split a stat file every few milliseconds per thread. Fields are numbered as in
// proc(5), from 3 (the state) to 22 (the start time); the command name (field 2) may hold
// spaces and parentheses, so the split starts at its last ')'.
type Line struct {
	f [20][]byte
	n int
}

// Fields splits b.
func Fields(b []byte) Line {
	var l Line
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 {
		return l
	}
	start := -1
	for j := i + 1; j <= len(b) && l.n < len(l.f); j++ {
		if j == len(b) || b[j] == ' ' || b[j] == '\n' {
			if start >= 0 {
				l.f[l.n] = b[start:j]
				l.n++
				start = -1
			}
		} else if start < 0 {
			start = j
		}
	}
	return l
}

// Field is field n (3 to 22), nil when the text has no such field.
func (l Line) Field(n int) []byte {
	if n < 3 || n-3 >= l.n {
		return nil
	}
	return l.f[n-3]
}

// State is field 3 (R, S, D, Z, ...), 0 when missing or longer than one byte.
func (l Line) State() byte {
	if f := l.Field(3); len(f) == 1 {
		return f[0]
	}
	return 0
}

// Int is field n as a decimal number, -1 when it is missing or not one.
func (l Line) Int(n int) int { return Atoi(l.Field(n)) }

// Atoi parses a decimal number without allocating; -1 when b is empty or not all digits.
func Atoi(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}
