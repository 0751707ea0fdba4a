package abi

import "github.com/flotilla-dev/flotilla/sdk/jsonlite"

// CSRAddon is what the host knows about the add-on an add-on agent's CSR is for: the
// klusterlet files these CSRs with the cluster agent's identity for the registrations the
// hub declared in the ManagedClusterAddOn's status.registrations (OCM's add-on registration).
type CSRAddon struct {
	// Name is the add-on (the CSR's open-cluster-management.io/addon-name label).
	Name string `json:"name"`
	// Enabled is true when a ManagedClusterAddOn of that name exists in the cluster's
	// namespace and is not being deleted.
	Enabled bool `json:"enabled"`
	// Registrations are the ManagedClusterAddOn's status.registrations: the signers and
	// subjects the hub declared for the add-on's agent. The cluster's agent can write that
	// status too, so a plugin must not take a subject from here on trust for the
	// kubernetes.io/kube-apiserver-client signer (whose certificates carry hub RBAC groups).
	Registrations []CSRAddonRegistration `json:"registrations"`
}

// CSRAddonRegistration is one entry of status.registrations.
type CSRAddonRegistration struct {
	SignerName string   `json:"signerName"`
	User       string   `json:"user"`
	Groups     []string `json:"groups"`
}

func (a *CSRAddon) appendJSON(w *jsonlite.Writer) {
	w.BeginObject()
	w.StringField("name", a.Name)
	w.BoolField("enabled", a.Enabled)
	w.Key("registrations")
	if a.Registrations == nil {
		w.Null()
	} else {
		w.BeginArray()
		for _, reg := range a.Registrations {
			w.BeginObject()
			w.StringField("signerName", reg.SignerName)
			w.StringField("user", reg.User)
			writeStrings(w, "groups", reg.Groups)
			w.EndObject()
		}
		w.EndArray()
	}
	w.EndObject()
}

func readCSRAddon(r *jsonlite.Reader) (*CSRAddon, error) {
	if r.Null() {
		return nil, nil
	}
	a := &CSRAddon{}
	err := r.Object(func(key string) error {
		var err error
		switch key {
		case "name":
			a.Name, err = r.String()
		case "enabled":
			a.Enabled, err = r.Bool()
		case "registrations":
			if r.Null() {
				a.Registrations = nil
				return nil
			}
			a.Registrations = []CSRAddonRegistration{}
			err = r.Array(func(i int) error {
				var reg CSRAddonRegistration
				err := r.Object(func(key string) error {
					var err error
					switch key {
					case "signerName":
						reg.SignerName, err = r.String()
					case "user":
						reg.User, err = r.String()
					case "groups":
						reg.Groups, err = readStrings(r)
					}
					return fieldErr(key, err)
				})
				a.Registrations = append(a.Registrations, reg)
				return indexErr(i, err)
			})
		}
		return fieldErr(key, err)
	})
	return a, err
}
