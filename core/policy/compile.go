package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/types"
)

// PackagePrefix is the package under which policies live: package flotilla.admission.<name>.
const PackagePrefix = "flotilla.admission"

// BuiltinAuthorized is the built-in asking the hub whether a user may do something.
const BuiltinAuthorized = "flotilla.authorized"

// Operations a policy may match.
const (
	OperationCreate = "CREATE"
	OperationUpdate = "UPDATE"
	OperationDelete = "DELETE"
)

// Served lists, by API group, the resources policies may match: the OCM resources and
// Flotilla's WasmPlugin and ManifestWorkReplicaSetOverride.
var Served = map[string][]string{
	"cluster.open-cluster-management.io": {"managedclusters", "managedclustersets", "managedclustersetbindings", "placements"},
	"work.open-cluster-management.io":    {"manifestworks", "manifestworkreplicasets"},
	"addon.open-cluster-management.io":   {"clustermanagementaddons", "managedclusteraddons", "addontemplates"},
	"flotilla.dev":                       {"wasmplugins", "manifestworkreplicasetoverrides"},
}

// unavailable are built-ins policies may not call: they reach the network or the process, or
// allocate without bound in one call, which a deadline cannot stop.
var unavailable = map[string]bool{
	"http.send": true, "net.lookup_ip_addr": true, "net.cidr_expand": true, "opa.runtime": true,
	"numbers.range": true, "numbers.range_step": true, "rego.parse_module": true,
}

// authorizedDecl declares flotilla.authorized(user, attributes) boolean.
var authorizedDecl = &ast.Builtin{
	Name:             BuiltinAuthorized,
	Decl:             types.NewFunction(types.Args(types.Named("user", types.A), types.Named("attributes", types.A)), types.Named("allowed", types.B)),
	Nondeterministic: true,
}

// capabilities are OPA's, less the unavailable built-ins, plus flotilla.authorized.
func capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	caps.Builtins = slices.DeleteFunc(caps.Builtins, func(b *ast.Builtin) bool {
		return unavailable[b.Name] || strings.HasPrefix(b.Name, "net.")
	})
	caps.Builtins = append(caps.Builtins, authorizedDecl)
	caps.AllowNet = []string{}
	return caps
}

// File is one Rego file of a Source.
type File struct {
	// Name is the file name, ending in .rego; a name ending in _test.rego holds tests.
	Name    string
	Content string
}

// IsTest says whether f holds tests rather than policies.
func (f File) IsTest() bool { return strings.HasSuffix(f.Name, "_test.rego") }

// Source is a set of files loaded together: the embedded defaults, one ConfigMap, a
// directory.
type Source struct {
	// Name identifies the source in errors, denials and metrics, e.g. "embedded" or
	// "configmap open-cluster-management-hub/team-policies".
	Name  string
	Files []File
}

// FilesFromFS reads the .rego files under dir of fsys (recursively), sorted by path; names
// are relative to dir.
func FilesFromFS(fsys fs.FS, dir string) ([]File, error) {
	var files []File
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
		if dir == "." {
			name = p
		}
		files = append(files, File{Name: name, Content: string(b)})
		return nil
	})
	return files, err
}

// Match is one entry of a policy's match rule.
type Match struct {
	Group      string   `json:"group"`
	Resources  []string `json:"resources"`
	Operations []string `json:"operations"`
}

// Policy is one compiled policy of a Set: an admission policy, or a gateway policy (no Match).
type Policy struct {
	// Name is the package path after flotilla.admission (flotilla.gateway), e.g. execute_as.
	Name string
	// Source is the name of the source that defines it.
	Source string
	Match  []Match
	query  rego.PreparedEvalQuery
}

// Set is a compiled, tested set of policies, ready to evaluate. It is immutable and safe for
// concurrent use.
type Set struct {
	policies []*Policy
	gateway  []*Policy            // under GatewayPackagePrefix (gateway.go)
	index    map[string][]*Policy // group/resource/operation
	compiler *ast.Compiler
	modules  map[string]*ast.Module
}

// Options configures compilation.
type Options struct {
	// Authorizer answers flotilla.authorized; nil answers every call with an error, so a policy
	// that asks denies.
	Authorizer Authorizer
	// SkipTests does not run the sources' tests.
	SkipTests bool
}

// Error is a compilation or test failure, naming the source and file.
type Error struct {
	Source string
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Source, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// parse parses the sources' files into modules keyed by "<source>/<file>".
func parse(sources []Source, caps *ast.Capabilities) (map[string]*ast.Module, map[string]string, error) {
	modules := map[string]*ast.Module{}
	origin := map[string]string{} // module key -> source name
	var errs []error
	for _, s := range sources {
		for _, f := range s.Files {
			key := moduleKey(s.Name, f.Name)
			if _, dup := modules[key]; dup {
				errs = append(errs, &Error{Source: s.Name, Err: fmt.Errorf("file %s given twice", f.Name)})
				continue
			}
			m, err := ast.ParseModuleWithOpts(key, f.Content, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: caps})
			if err != nil {
				errs = append(errs, &Error{Source: s.Name, Err: flatten(err)})
				continue
			}
			modules[key], origin[key] = m, s.Name
		}
	}
	return modules, origin, errors.Join(errs...)
}

// newCompiler is the compiler every Set and test run uses.
func newCompiler(caps *ast.Capabilities) *ast.Compiler {
	return ast.NewCompiler().WithCapabilities(caps).WithDefaultRegoVersion(ast.RegoV1).WithStrict(false)
}

// Compile parses, compiles and (unless opts.SkipTests) tests the sources together and
// prepares every policy's query. Test files are compiled with the rest only to run the tests:
// what a test file declares never reaches the Set. Each non-test package belongs to one
// source, so a source cannot change another's rules (a ConfigMap cannot loosen a default).
// The error names the source and file of each problem.
func Compile(ctx context.Context, sources []Source, opts Options) (*Set, error) {
	caps := capabilities()
	all, origin, err := parse(sources, caps)
	if err != nil {
		return nil, err
	}
	modules := map[string]*ast.Module{}
	owner := map[string]string{} // package -> source
	var errs []error
	for _, src := range sources {
		for _, f := range src.Files {
			key := moduleKey(src.Name, f.Name)
			m := all[key]
			if f.IsTest() || m == nil {
				continue
			}
			modules[key] = m
			pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
			if o, ok := owner[pkg]; ok && o != src.Name {
				errs = append(errs, &Error{Source: src.Name, Err: fmt.Errorf("%s: package %s is already defined by %s: a package comes from one source", f.Name, pkg, o)})
				continue
			}
			owner[pkg] = src.Name
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	compiler := newCompiler(caps)
	if compiler.Compile(modules); compiler.Failed() {
		return nil, compileError(compiler.Errors, origin)
	}
	set := &Set{index: map[string][]*Policy{}, compiler: compiler, modules: modules}
	if err := set.discover(ctx, modules, origin, opts); err != nil {
		return nil, err
	}
	if err := set.discoverGateway(ctx, modules, origin, opts); err != nil {
		return nil, err
	}
	if !opts.SkipTests {
		results, err := runTests(ctx, all, opts.Authorizer)
		if err != nil {
			return nil, compileError(err, origin)
		}
		if failed := Failed(results); len(failed) > 0 {
			return nil, &Error{Source: sourceOf(failed[0].File, origin), Err: fmt.Errorf("%d of %d tests failed: %s", len(failed), len(results), strings.Join(names(failed), ", "))}
		}
	}
	return set, nil
}

// compileError attributes OPA's errors to their sources.
func compileError(err error, origin map[string]string) error {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) {
		return err
	}
	bySource := map[string][]string{}
	var order []string
	for _, e := range astErrs {
		src := "policies"
		if e.Location != nil {
			src = sourceOf(e.Location.File, origin)
		}
		if _, ok := bySource[src]; !ok {
			order = append(order, src)
		}
		bySource[src] = append(bySource[src], e.Error())
	}
	var errs []error
	for _, src := range order {
		errs = append(errs, &Error{Source: src, Err: errors.New(strings.Join(bySource[src], "; "))})
	}
	return errors.Join(errs...)
}

// moduleKey names a module in OPA's errors: <source>/<file>.
func moduleKey(source, file string) string { return strings.TrimSuffix(source, "/") + "/" + file }

// flatten drops OPA's "n errors occurred:" header: the errors name their file and line.
func flatten(err error) error {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) || len(astErrs) == 0 {
		return err
	}
	msgs := make([]string, len(astErrs))
	for i, e := range astErrs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

func sourceOf(file string, origin map[string]string) string {
	if s, ok := origin[file]; ok {
		return s
	}
	return "policies"
}

// pkgRules is what a policy package declares, as found by packagesUnder.
type pkgRules struct {
	source            string // where its first module (by file name) came from
	deny, warn, match bool
}

// packagesUnder finds the packages under prefix in modules and the rules each declares,
// returned with their names (relative to prefix) sorted.
func packagesUnder(modules map[string]*ast.Module, origin map[string]string, prefix string) (map[string]*pkgRules, []string) {
	pkgs := map[string]*pkgRules{}
	keys := make([]string, 0, len(modules))
	for k := range modules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	path := "data." + prefix + "."
	for _, k := range keys {
		m := modules[k]
		pkg := m.Package.Path.String()
		if !strings.HasPrefix(pkg, path) {
			continue
		}
		name := strings.TrimPrefix(pkg, path)
		info := pkgs[name]
		if info == nil {
			info = &pkgRules{source: origin[k]}
			pkgs[name] = info
		}
		for _, r := range m.Rules {
			switch r.Head.Name.String() {
			case "match":
				info.match = true
			case "deny":
				info.deny = true
			case "warn":
				info.warn = true
			}
		}
	}
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	return pkgs, names
}

// discover finds the policies: packages under PackagePrefix declared in non-test files. Each
// must have a constant, valid match rule and a deny or warn rule.
func (s *Set) discover(ctx context.Context, modules map[string]*ast.Module, origin map[string]string, opts Options) error {
	pkgs, names := packagesUnder(modules, origin, PackagePrefix)
	authz := opts.Authorizer
	for _, name := range names {
		info := pkgs[name]
		pkg := PackagePrefix + "." + name
		if !info.match {
			return &Error{Source: info.source, Err: fmt.Errorf("package %s has no match rule: a policy declares the requests it sees (see policies/README.md)", pkg)}
		}
		if !info.deny && !info.warn {
			return &Error{Source: info.source, Err: fmt.Errorf("package %s has neither a deny nor a warn rule", pkg)}
		}
		match, err := s.evalMatch(ctx, pkg)
		if err != nil {
			return &Error{Source: info.source, Err: err}
		}
		var parts []string
		if info.deny {
			parts = append(parts, fmt.Sprintf("deny := data.%s.deny", pkg))
		}
		if info.warn {
			parts = append(parts, fmt.Sprintf("warn := data.%s.warn", pkg))
		}
		q, err := rego.New(
			rego.Query(strings.Join(parts, "; ")),
			rego.Compiler(s.compiler),
			rego.StrictBuiltinErrors(true),
			authorizedFunction(authz),
		).PrepareForEval(ctx)
		if err != nil {
			return &Error{Source: info.source, Err: fmt.Errorf("package %s: %w", pkg, err)}
		}
		p := &Policy{Name: name, Source: info.source, Match: match, query: q}
		s.policies = append(s.policies, p)
		for _, m := range match {
			for _, r := range m.Resources {
				for _, op := range m.Operations {
					k := indexKey(m.Group, r, op)
					if !slices.Contains(s.index[k], p) {
						s.index[k] = append(s.index[k], p)
					}
				}
			}
		}
	}
	return nil
}

// evalMatch evaluates and checks the match rule of pkg.
func (s *Set) evalMatch(ctx context.Context, pkg string) ([]Match, error) {
	rs, err := rego.New(rego.Query("data."+pkg+".match"), rego.Compiler(s.compiler), rego.StrictBuiltinErrors(true),
		authorizedFunction(nil)).Eval(ctx)
	if err != nil {
		return nil, fmt.Errorf("package %s: evaluating match: %w", pkg, err)
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, fmt.Errorf("package %s: match is undefined without input: it must be a constant list of {group, resources, operations}", pkg)
	}
	return parseMatch(pkg, rs[0].Expressions[0].Value)
}

// parseMatch checks a match value against Served.
func parseMatch(pkg string, v any) ([]Match, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("package %s: match must be a list of {group, resources, operations}, got %T", pkg, v)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("package %s: match is empty", pkg)
	}
	var out []Match
	for i, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("package %s: match[%d] must be an object {group, resources, operations}", pkg, i)
		}
		for k := range obj {
			if k != "group" && k != "resources" && k != "operations" {
				return nil, fmt.Errorf("package %s: match[%d].%s: unknown field (want group, resources, operations)", pkg, i, k)
			}
		}
		group, _ := obj["group"].(string)
		served, ok := Served[group]
		if !ok {
			return nil, fmt.Errorf("package %s: match[%d].group %q is not served (served: %s)", pkg, i, obj["group"], strings.Join(servedGroups(), ", "))
		}
		resources, err := stringList(obj["resources"])
		if err != nil || len(resources) == 0 {
			return nil, fmt.Errorf("package %s: match[%d].resources must be a non-empty list of strings", pkg, i)
		}
		for _, r := range resources {
			if !slices.Contains(served, r) {
				return nil, fmt.Errorf("package %s: match[%d].resources: %q is not served in group %s (served: %s)", pkg, i, r, group, strings.Join(served, ", "))
			}
		}
		ops, err := stringList(obj["operations"])
		if err != nil || len(ops) == 0 {
			return nil, fmt.Errorf("package %s: match[%d].operations must be a non-empty list of CREATE, UPDATE, DELETE", pkg, i)
		}
		for _, op := range ops {
			if op != OperationCreate && op != OperationUpdate && op != OperationDelete {
				return nil, fmt.Errorf("package %s: match[%d].operations: %q is not one of CREATE, UPDATE, DELETE", pkg, i, op)
			}
		}
		out = append(out, Match{Group: group, Resources: resources, Operations: ops})
	}
	return out, nil
}

func servedGroups() []string {
	var gs []string
	for g := range Served {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	return gs
}

func stringList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New("not a list")
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, errors.New("not a string")
		}
		out = append(out, s)
	}
	return out, nil
}

func indexKey(group, resource, op string) string { return group + "/" + resource + "/" + op }

// Policies are the set's policies, sorted by name.
func (s *Set) Policies() []*Policy { return s.policies }

// Matching are the policies that see an operation on a resource.
func (s *Set) Matching(group, resource, operation string) []*Policy {
	return s.index[indexKey(group, resource, operation)]
}

// Rules are the (group, resource) → operations the set's policies match, for the webhook
// configuration.
func (s *Set) Rules() map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for _, p := range s.policies {
		for _, m := range p.Match {
			if out[m.Group] == nil {
				out[m.Group] = map[string][]string{}
			}
			for _, r := range m.Resources {
				for _, op := range m.Operations {
					if !slices.Contains(out[m.Group][r], op) {
						out[m.Group][r] = append(out[m.Group][r], op)
					}
				}
			}
		}
	}
	for _, rs := range out {
		for _, ops := range rs {
			sort.Strings(ops)
		}
	}
	return out
}
