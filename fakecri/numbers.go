package fakecri

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// addSat adds two nanosecond times/durations, saturating at the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}

// addSatU adds, saturating at math.MaxUint64.
func addSatU(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// subSatU subtracts, saturating at 0.
func subSatU(a, b uint64) uint64 {
	if b >= a {
		return 0
	}
	return a - b
}

// mulDiv returns floor(a*b/c) computed in 128 bits, saturating at
// math.MaxUint64. c must not be 0.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// mulDivCeil returns ceil(a*b/c) computed in 128 bits, saturating at
// math.MaxUint64. c must not be 0.
func mulDivCeil(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxUint64
	}
	q, rem := bits.Div64(hi, lo, c)
	if rem != 0 && q != math.MaxUint64 {
		q++
	}
	return q
}

// byteSuffix splits a Kubernetes byte-quantity suffix off s and returns its
// multiplier (1 when there is none).
func byteSuffix(s string) (num string, mult uint64) {
	if len(s) >= 2 {
		var m uint64
		switch s[len(s)-2:] {
		case "Ki":
			m = 1 << 10
		case "Mi":
			m = 1 << 20
		case "Gi":
			m = 1 << 30
		case "Ti":
			m = 1 << 40
		case "Pi":
			m = 1 << 50
		case "Ei":
			m = 1 << 60
		}
		if m != 0 {
			return s[:len(s)-2], m
		}
	}
	if len(s) >= 1 {
		var m uint64
		switch s[len(s)-1] {
		case 'k':
			m = 1e3
		case 'M':
			m = 1e6
		case 'G':
			m = 1e9
		case 'T':
			m = 1e12
		case 'P':
			m = 1e15
		case 'E':
			m = 1e18
		}
		if m != 0 {
			return s[:len(s)-1], m
		}
	}
	return s, 1
}

// parseBytes parses a Kubernetes-style byte quantity ("20Mi", "1.5G",
// "1048576"); fractions round up to whole bytes.
func parseBytes(s string) (uint64, error) {
	num, mult := byteSuffix(s)
	v, err := parseDecimal(num, mult)
	if err != nil {
		return 0, fmt.Errorf("want a byte quantity such as 20Mi: %w", err)
	}
	return v, nil
}

// parseMilliCPU parses a CPU quantity ("100m", "0.5", "2") into millicores.
func parseMilliCPU(s string) (uint64, error) {
	var v uint64
	var err error
	if num, ok := strings.CutSuffix(s, "m"); ok {
		v, err = parseDecimal(num, 1)
	} else {
		v, err = parseDecimal(s, 1000)
	}
	if err != nil {
		return 0, fmt.Errorf("want a CPU quantity such as 100m or 0.5: %w", err)
	}
	if v > 1<<40 {
		return 0, fmt.Errorf("CPU quantity %q is too large", s)
	}
	return v, nil
}

// parseDecimal returns ceil(x*mult) for a plain non-negative decimal x
// ("12", "0.25"); no signs, exponents or spaces.
func parseDecimal(s string, mult uint64) (uint64, error) {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if intPart == "" || !allDigits(intPart) || (hasFrac && (frac == "" || !allDigits(frac))) {
		return 0, fmt.Errorf("%q is not a non-negative decimal number", s)
	}
	if len(frac) > 18 {
		return 0, fmt.Errorf("%q has more than 18 decimals", s)
	}
	n, err := strconv.ParseUint(intPart, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	hi, v := bits.Mul64(n, mult)
	if hi != 0 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	if hasFrac {
		f, _ := strconv.ParseUint(frac, 10, 64)
		pow := uint64(1)
		for range len(frac) {
			pow *= 10
		}
		add := mulDivCeil(f, mult, pow)
		var carry uint64
		v, carry = bits.Add64(v, add, 0)
		if carry != 0 {
			return 0, fmt.Errorf("%q is out of range", s)
		}
	}
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return v, nil
}

// allDigits reports whether s is made of ASCII digits only.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseDuration parses a non-negative Go duration ("500ms", "2s", "1h30m").
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// parseRate parses "<bytes>/<period>" such as "1Mi/s", "10Mi/1m" or
// "512Ki/500ms"; a bare unit period ("s", "m", "h") means one of it.
func parseRate(s string) (bytes uint64, per time.Duration, err error) {
	q, p, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("want <quantity>/<period> such as 1Mi/s")
	}
	if bytes, err = parseBytes(q); err != nil {
		return 0, 0, err
	}
	switch p {
	case "s", "m", "h":
		p = "1" + p
	}
	if per, err = parseDuration(p); err != nil {
		return 0, 0, fmt.Errorf("bad period: %w", err)
	}
	if per <= 0 {
		return 0, 0, fmt.Errorf("period must be positive")
	}
	return bytes, per, nil
}
