// Command csr-autoapprove is a CSRApproval plugin that approves first-time
// registrations of clusters whose name matches a glob, requested by a listed
// bootstrap user or a member of a listed group — the "auto approve" of OCM's
// cluster manager, scoped by name.
//
// pluginConfig:
//
//	{"clusterNamePatterns": ["dev-*"],
//	 "users": ["system:serviceaccount:open-cluster-management:agent-registration-bootstrap"],
//	 "groups": ["system:bootstrappers:managedcluster"]}
//
// Patterns use path.Match syntax (*, ?, [a-z]); clusterNamePatterns must be
// non-empty, and so must users or groups (groups match the requester's groups,
// e.g. the group of Kubernetes bootstrap tokens). It approves a CSR when
// renewal is false, clusterName matches a pattern, the requester is listed (by
// name or group) and the subject names that cluster's agent; it abstains
// otherwise (renewals are csr-renewal's job).
package main

import (
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/flotilla-dev/flotilla/sdk"
	"github.com/flotilla-dev/flotilla/sdk/abi"
	"github.com/flotilla-dev/flotilla/sdk/csrapproval"
	"github.com/flotilla-dev/flotilla/sdk/jsonlite"
)

const identityPrefix = "system:open-cluster-management:"

type config struct {
	ClusterNamePatterns []string
	Users               []string
	Groups              []string
}

// parseConfig decodes and checks pluginConfig; unknown fields are rejected so a
// misspelt key cannot silently disable the plugin.
func parseConfig(raw []byte) (config, error) {
	var c config
	if len(raw) == 0 {
		return c, errors.New("pluginConfig is required: {\"clusterNamePatterns\": [...], \"users\": [...], \"groups\": [...]}")
	}
	r := jsonlite.NewReader(raw)
	if r.Peek() != jsonlite.Object {
		return c, errors.New("pluginConfig must be a JSON object")
	}
	list := func(field string) ([]string, error) {
		var out []string
		err := r.Array(func(i int) error {
			s, err := r.String()
			if err != nil {
				return errors.New("pluginConfig." + field + "[" + strconv.Itoa(i) + "]: " + err.Error())
			}
			out = append(out, s)
			return nil
		})
		return out, err
	}
	err := r.Object(func(key string) error {
		var err error
		switch key {
		case "clusterNamePatterns":
			c.ClusterNamePatterns, err = list(key)
		case "users":
			c.Users, err = list(key)
		case "groups":
			c.Groups, err = list(key)
		default:
			return errors.New("pluginConfig: unknown field " + strconv.Quote(key) + " (known: clusterNamePatterns, users, groups)")
		}
		if err != nil && !strings.HasPrefix(err.Error(), "pluginConfig.") {
			err = errors.New("pluginConfig." + key + ": " + err.Error())
		}
		return err
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return c, err
	}
	if len(c.ClusterNamePatterns) == 0 {
		return c, errors.New("pluginConfig.clusterNamePatterns: must list at least one pattern")
	}
	for i, p := range c.ClusterNamePatterns {
		if p == "" {
			return c, errors.New("pluginConfig.clusterNamePatterns[" + strconv.Itoa(i) + "]: must not be empty")
		}
		if _, err := path.Match(p, ""); err != nil {
			return c, errors.New("pluginConfig.clusterNamePatterns[" + strconv.Itoa(i) + "]: " + strconv.Quote(p) + " is not a valid pattern")
		}
	}
	if len(c.Users) == 0 && len(c.Groups) == 0 {
		return c, errors.New("pluginConfig.users, pluginConfig.groups: must list at least one user or group")
	}
	for _, l := range []struct {
		field string
		items []string
	}{{"users", c.Users}, {"groups", c.Groups}} {
		for i, u := range l.items {
			if u == "" {
				return c, errors.New("pluginConfig." + l.field + "[" + strconv.Itoa(i) + "]: must not be empty")
			}
		}
	}
	return c, nil
}

type autoApprove struct {
	cfg    config
	parsed bool
}

func init() { csrapproval.Register(&autoApprove{}) }

func main() {}

func (a *autoApprove) ValidateConfig(raw []byte) error {
	_, err := parseConfig(raw)
	return err
}

func abstain(msg string) (abi.CSRDecision, error) {
	return abi.CSRDecision{Decision: abi.CSRAbstain, Message: msg}, nil
}

func (a *autoApprove) ReviewCSR(h sdk.Host, r *abi.CSRReview) (abi.CSRDecision, error) {
	if !a.parsed {
		cfg, err := parseConfig(h.Config())
		if err != nil {
			return abi.CSRDecision{}, err
		}
		a.cfg, a.parsed = cfg, true
	}
	if r.Renewal {
		return abstain("renewals are not auto-approved by this plugin")
	}
	if !slices.Contains(a.cfg.Users, r.Username) && !slices.ContainsFunc(r.Groups, func(g string) bool {
		return slices.Contains(a.cfg.Groups, g)
	}) {
		return abstain("requester " + r.Username + " is not in pluginConfig.users, nor in one of pluginConfig.groups")
	}
	matched := false
	for _, p := range a.cfg.ClusterNamePatterns {
		if ok, _ := path.Match(p, r.ClusterName); ok {
			matched = true
			break
		}
	}
	if !matched {
		return abstain("cluster name " + r.ClusterName + " matches no pluginConfig.clusterNamePatterns")
	}
	agent, ok := strings.CutPrefix(r.Subject.CommonName, identityPrefix+r.ClusterName+":")
	if !ok || agent == "" || strings.Contains(agent, ":") ||
		!slices.Contains(r.Subject.Organizations, identityPrefix+r.ClusterName) {
		return abstain("subject is not an agent identity of cluster " + r.ClusterName)
	}
	return abi.CSRDecision{Decision: abi.CSRApprove, Message: "cluster " + r.ClusterName + " registered by " + r.Username + " matches the auto-approval rules"}, nil
}
