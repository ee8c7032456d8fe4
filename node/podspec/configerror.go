package podspec

import "errors"

// ConfigError is a fault of a container's configuration that the kubelet
// reports to the user in exactly these words (its makeEnvironmentVariables
// and generateContainerConfig errors: `configmap "nosuch" not found`,
// `couldn't find key absent in ConfigMap ns/settings`): the Failed event
// says "Error: <Message>" and the CreateContainerConfigError waiting
// message is Message. The errors that carry one wrap it with lockstep's
// context for the logs.
type ConfigError struct {
	Message string
}

func (e *ConfigError) Error() string { return e.Message }

// UserMessage is what the user is told of a container config error: the
// kubelet's words (the ConfigError err wraps), else err's own text ("" for
// nil).
func UserMessage(err error) string {
	if err == nil {
		return ""
	}
	if ce, ok := errors.AsType[*ConfigError](err); ok {
		return ce.Message
	}
	return err.Error()
}
