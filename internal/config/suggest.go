package config

import (
	"strings"
	"unicode/utf8"
)

// maxSuggestDistance is how many edits Closest allows; typos such as
// POLL_INTERVALL and LOGLEVEL are one each.
const maxSuggestDistance = 2

// Closest returns the name in known that name was most likely meant to be,
// if one is at most two edits away, ignoring case and _ versus -. A word
// cut short (MQTT_USER for MQTT_USERNAME) costs one edit; ties go to the
// earlier name. Every place a user types an unknown name uses it.
func Closest(name string, known []string) (string, bool) {
	best, bestDist := "", maxSuggestDistance+1
	n := foldName(name)
	if n == "" || len(n) > 200 {
		return "", false
	}
	for _, k := range known {
		if d := nameDistance(n, foldName(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, bestDist <= maxSuggestDistance
}

// foldName is a name as Closest compares it: upper case, - as _.
func foldName(s string) string {
	return strings.ReplaceAll(strings.ToUpper(s), "-", "_")
}

// nameDistance is the smaller of the whole names' edit distance and, for
// names of as many words, the sum of their words' distances.
func nameDistance(a, b string) int {
	d := editDistance(a, b)
	wa, wb := strings.Split(a, "_"), strings.Split(b, "_")
	if len(wa) != len(wb) || len(wa) < 2 {
		return d
	}
	sum := 0
	for i := range wa {
		sum += wordDistance(wa[i], wb[i])
		if sum >= d {
			return d
		}
	}
	return sum
}

// wordDistance is the edit distance of two words, or less when one is the
// other cut short: USER is 1 from USERNAME. Words under three letters are
// never taken as cut short.
func wordDistance(a, b string) int {
	d := editDistance(a, b)
	short, long := a, b
	if len(short) > len(long) {
		short, long = long, short
	}
	if len(short) < 3 {
		return d
	}
	for k := 3; k < len(long); k++ {
		if c := 1 + editDistance(short, long[:k]); c < d {
			d = c
		}
	}
	return d
}

// editDistance is the optimal string alignment distance of a and b, on
// runes. It is quadratic, so callers bound the length.
func editDistance(a, b string) int {
	if a == b {
		return 0
	}
	ra, rb := []rune(a), []rune(b)
	if !utf8.ValidString(a) || !utf8.ValidString(b) {
		ra, rb = []rune(strings.ToValidUTF8(a, "?")), []rune(strings.ToValidUTF8(b, "?"))
	}
	// Three rows: the one before the previous is needed for a swap.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
