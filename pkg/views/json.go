package views

// This file holds the JSON checking the views do by hand, exactly as
// encoding/json would (json.Compact and json.Valid for records), without
// its reflection or allocations; strings are spelled by
// textfmt.AppendJSONString.

// maxJSONDepth is encoding/json's nesting limit: a value nested deeper is
// not valid JSON to json.Valid.
const maxJSONDepth = 10000

// appendCompactJSON appends src with the insignificant space elided, as
// json.Compact does, if src is valid JSON (json.Valid); if it is not, it
// returns b unchanged and false. It reads src once.
func appendCompactJSON(b, src []byte) ([]byte, bool) {
	n0 := len(b)
	// One bit per open container, set for an object, clear for an array.
	var stack [4]uint64
	objects := stack[:]
	depth := 0
	i, start := 0, 0 // src[start:i] is yet to be appended
	key := false     // an object's key comes next
value:
	for {
		if i < len(src) && isJSONSpace(src[i]) {
			b, i, start = elideSpace(b, src, i, start)
		}
		if key {
			if i == len(src) || src[i] != '"' {
				return b[:n0], false
			}
			if i = endJSONString(src, i); i < 0 {
				return b[:n0], false
			}
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			if i == len(src) || src[i] != ':' {
				return b[:n0], false
			}
			i++
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			key = false
		}
		if i == len(src) {
			return b[:n0], false
		}
		switch c := src[i]; c {
		case '{', '[':
			if depth == maxJSONDepth {
				return b[:n0], false
			}
			if depth>>6 == len(objects) {
				objects = append(objects, 0)
			}
			if c == '{' {
				objects[depth>>6] |= 1 << (depth & 63)
			} else {
				objects[depth>>6] &^= 1 << (depth & 63)
			}
			depth++
			i++
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			if i < len(src) && src[i] == c+2 { // '}' or ']': empty
				i++
				depth--
				break
			}
			key = c == '{'
			continue value
		case '"':
			i = endJSONString(src, i)
		case 't':
			i = cutLiteral(src, i, "true")
		case 'f':
			i = cutLiteral(src, i, "false")
		case 'n':
			i = cutLiteral(src, i, "null")
		default:
			i = endJSONNumber(src, i)
		}
		if i < 0 {
			return b[:n0], false
		}
		// After a value: close containers until a comma.
		for {
			if i < len(src) && isJSONSpace(src[i]) {
				b, i, start = elideSpace(b, src, i, start)
			}
			if depth == 0 {
				if i < len(src) {
					return b[:n0], false
				}
				return append(b, src[start:]...), true
			}
			if i == len(src) {
				return b[:n0], false
			}
			inObject := objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
			switch c := src[i]; {
			case c == ',':
				i++
				key = inObject
				continue value
			case c == '}' && inObject, c == ']' && !inObject:
				i++
				depth--
			default:
				return b[:n0], false
			}
		}
	}
}

// elideSpace appends src[start:i] to b and skips the white space at src[i:];
// it returns b and the new i and start, both after the space.
func elideSpace(b, src []byte, i, start int) ([]byte, int, int) {
	b = append(b, src[start:i]...)
	for i++; i < len(src) && isJSONSpace(src[i]); i++ {
	}
	return b, i, i
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jsonPlain holds the bytes a JSON string holds as they are: not '"', '\\'
// or a control character below 0x20. encoding/json's scanner does not
// check UTF-8.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// endJSONString returns the index after the JSON string starting at
// src[i], a '"', or -1 if it is not a valid string.
func endJSONString(src []byte, i int) int {
	for i++; i < len(src); {
		if jsonPlain[src[i]] {
			i++
			continue
		}
		switch src[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 == len(src) {
				return -1
			}
			switch src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(src) {
					return -1
				}
				for _, h := range src[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default:
			return -1 // a control character
		}
	}
	return -1
}

// endJSONNumber returns the index after the JSON number starting at src[i],
// or -1 if there is none.
func endJSONNumber(src []byte, i int) int {
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i == len(src):
		return -1
	case src[i] == '0':
		i++
	case '1' <= src[i] && src[i] <= '9':
		i = endDigits(src, i+1)
	default:
		return -1
	}
	if i < len(src) && src[i] == '.' {
		if i+1 == len(src) || !isDigit(src[i+1]) {
			return -1
		}
		i = endDigits(src, i+1)
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i == len(src) || !isDigit(src[i]) {
			return -1
		}
		i = endDigits(src, i)
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func endDigits(src []byte, i int) int {
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	return i
}

// cutLiteral returns the index after lit at src[i], or -1 if it is not
// there.
func cutLiteral(src []byte, i int, lit string) int {
	if len(src)-i < len(lit) || string(src[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
