package deps

// ObjectAPI reads the ConfigMaps and Secrets the node's pods reference
// (volumes, environment): API.ConfigMaps and API.Secrets together, as
// API.Objects returns them. Under Node authorization a node may read only
// the objects its own pods reference.
type ObjectAPI interface {
	ConfigMapAPI
	SecretAPI
}

// Objects joins a's ConfigMaps and Secrets ports into one ObjectAPI; nil
// when either is missing (standalone: none can be read).
func (a API) Objects() ObjectAPI {
	if a.ConfigMaps == nil || a.Secrets == nil {
		return nil
	}
	return objects{a.ConfigMaps, a.Secrets}
}

type objects struct {
	ConfigMapAPI
	SecretAPI
}
