package podspec

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EnvFile is the content of a file an env var's fileKeyRef names, read
// by the caller from the volume's host directory (podspec does no I/O).
type EnvFile struct {
	// Path is the file's path on the host (the kubelet's error names it).
	Path string
	Data []byte
	// Err is why it could not be read (nil: Data holds it).
	Err error
}

// EnvFileKey names an env file in ContainerOptions.EnvFiles: the volume
// and the path in it, as the fileKeyRef says them.
func EnvFileKey(volume, path string) string { return volume + "/" + path }

// ParseEnvFile returns key's value in an env file in the format of the
// kubelet v1.37 (pkg/kubelet/util/env ParseEnv): one KEY='value' a line
// (the value in single quotes, possibly over several lines; a comment
// may follow), blank lines and # comments skipped, leading blanks
// ignored; "KEY= 'x'" (a blank after '=') gives KEY the empty value. The
// file is read up to the first line that defines key: a malformed line
// before it is an error, one after it is not. A key not defined gives
// "". Lines longer than 64 KiB are an error, as with the kubelet's
// scanner.
func ParseEnvFile(data []byte, key string) (string, error) {
	scanner := bufio.NewScanner(bytes.NewReader(data))
	lineNum := 0
	for scanner.Scan() {
		lineNum++
		line := strings.TrimLeft(scanner.Text(), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", lineNum)
		}
		trimmedName := strings.TrimRight(name, " \t")
		switch {
		case trimmedName == "":
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name", lineNum)
		case trimmedName != name:
			return "", fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", lineNum)
		}
		if trimmed := strings.TrimLeft(value, " \t"); trimmed != value {
			if name == key {
				return "", nil
			}
			continue
		}
		if !strings.HasPrefix(value, "'") {
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", lineNum)
		}
		var b strings.Builder
		rest, start := value[1:], lineNum
		for {
			if end := strings.Index(rest, "'"); end >= 0 {
				b.WriteString(rest[:end])
				after := strings.TrimLeft(rest[end+1:], " \t")
				if after != "" && !strings.HasPrefix(after, "#") {
					return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", lineNum)
				}
				break
			}
			b.WriteString(rest)
			b.WriteString("\n")
			if !scanner.Scan() {
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", start)
			}
			lineNum++
			rest = scanner.Text()
		}
		if name == key {
			return b.String(), nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("error reading environment variable file: %w", err)
	}
	return "", nil
}

// fileKeyValue resolves an env var's fileKeyRef from opts.EnvFiles, with
// the kubelet's errors (makeEnvironmentVariables): the volume must be
// one the pod mounts from the host, a file that cannot be read or parsed
// is "couldn't parse env file" (the kubelet logs the detail), and a key
// missing or empty is an error unless optional.
func fileKeyValue(ref *corev1.FileKeySelector, opts ContainerOptions) (value string, skip bool, err error) {
	f, ok := opts.EnvFiles[EnvFileKey(ref.VolumeName, ref.Path)]
	if !ok {
		return "", false, &ConfigError{fmt.Sprintf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)}
	}
	if f.Err != nil {
		return "", false, fmt.Errorf("env file %s: %w: %w", f.Path, f.Err, &ConfigError{"couldn't parse env file"})
	}
	v, err := ParseEnvFile(f.Data, ref.Key)
	if err != nil {
		return "", false, fmt.Errorf("env file %s: %w: %w", f.Path, err, &ConfigError{"couldn't parse env file"})
	}
	if v == "" {
		if ref.Optional != nil && *ref.Optional {
			return "", true, nil
		}
		return "", false, &ConfigError{fmt.Sprintf("environment variable key %q not found in file %q", ref.Key, f.Path)}
	}
	return v, false, nil
}
