package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
	"github.com/flotilla-dev/flotilla/core/policy"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/hub/admission"
	"github.com/flotilla-dev/flotilla/hub/manager"
)

// policyFieldManager owns what `flotilla policy push` applies.
const policyFieldManager = "flotilla-cli"

// Exit statuses of `flotilla policy eval`.
const (
	exitDenied = 1
	exitError  = 2
)

// statusError is an error asking for a given exit status.
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// ExitCode is the status the binary exits with after a command returned err: the one the
// command asked for (flotilla policy eval: 1 denied, 2 error), 1 for any other error, 0 for nil.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var s *statusError
	if errors.As(err, &s) {
		return s.code
	}
	return 1
}

func withStatus(code int, err error) error {
	if err == nil {
		return nil
	}
	var s *statusError
	if errors.As(err, &s) {
		return err
	}
	return &statusError{code: code, err: err}
}

func newPolicyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Test, evaluate and push the hub's admission policies (Rego)",
		Long: `The hub's admission gates are Rego policies (Open Policy Agent): the defaults built into the
hub and the policies of ConfigMaps labelled flotilla.dev/policy=true in the hub's namespace.
A policy is a package under flotilla.admission with a constant match rule (the requests it
sees) and deny and/or warn rules; a gateway policy, a package under flotilla.gateway with a
deny rule, judges every request the hub's cluster-gateway proxies to a managed cluster. Tests
are test_* rules in *_test.rego files beside them. See policies/README.md for the convention
and the input documents.

  flotilla policy test   runs a policy's tests and checks it as the hub would load it
  flotilla policy eval   shows what the policies decide for one admission or gateway request
  flotilla policy push   tests a policy, stores it in a ConfigMap and waits for the hub's verdict`,
	}
	cmd.AddCommand(newPolicyTestCommand(), newPolicyEvalCommand(), newPolicyPushCommand())
	return cmd
}

// --- flotilla policy test ---

func newPolicyTestCommand() *cobra.Command {
	var noDefaults, verbose bool
	cmd := &cobra.Command{
		Use:   "test [DIR|FILE ...]",
		Short: "Run the tests of policies and check them as the hub would load them",
		Long: `test compiles the given .rego files and directories (recursively; default: the current
directory) together with the hub's embedded default policies and library
(data.flotilla.lib), runs every test_* rule of the given files as opa test does, and
prints the failures with their location and error (every result with -v) and a summary,
PASS: n/m or FAIL: k/m. Each argument is one source, as one ConfigMap is on the hub.

It then compiles the set the way the hub loads it, so that what the hub would refuse
(a package under flotilla.admission without a match rule, a match on a resource the hub
does not serve, a package under flotilla.gateway with a match rule, a package that is
already one of the defaults...) is reported here.

flotilla.authorized (the hub's SubjectAccessReview built-in) has no answer in tests:
mock it with "with flotilla.authorized as f" or "with data.flotilla.lib.allowed as f".
The defaults' own tests are not run.

test fails (exit status 1) on a failing test, a compile error, a policy the hub would
refuse, and when the arguments hold no test at all: a policy without tests is a mistake.
--no-defaults leaves out the embedded defaults, for policies that do not use
data.flotilla.lib or to test a copy of the defaults themselves.`,
		Example: `  # The policies and tests of a directory
  flotilla policy test ./team-policies/

  # Two files, every result shown
  flotilla policy test -v no_public_lb.rego no_public_lb_test.rego

  # A checkout of the defaults (policies/), without the embedded copy
  flotilla policy test --no-defaults policies/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			sources, err := policySourcesFromArgs(args)
			if err != nil {
				return err
			}
			return checkPolicies(cmd.Context(), cmd.OutOrStdout(), sources, !noDefaults, verbose)
		},
	}
	cmd.Flags().BoolVar(&noDefaults, "no-defaults", false, "do not load the embedded default policies and library (data.flotilla.lib)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every test result and the policies found, not only failures")
	return cmd
}

// policySourcesFromArgs reads each argument, a .rego file or a directory of them (walked
// recursively), into one Source named after the argument.
func policySourcesFromArgs(args []string) ([]policy.Source, error) {
	var sources []policy.Source
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		src := policy.Source{Name: arg}
		if st.IsDir() {
			if src.Files, err = policy.FilesFromFS(os.DirFS(arg), "."); err != nil {
				return nil, fmt.Errorf("reading %s: %w", arg, err)
			}
			if len(src.Files) == 0 {
				return nil, fmt.Errorf("%s: no .rego file in the directory", arg)
			}
		} else {
			if !strings.HasSuffix(arg, ".rego") {
				return nil, fmt.Errorf("%s: not a .rego file", arg)
			}
			b, err := os.ReadFile(arg)
			if err != nil {
				return nil, err
			}
			src.Files = []policy.File{{Name: filepath.Base(arg), Content: string(b)}}
		}
		sources = append(sources, src)
	}
	return sources, nil
}

// embeddedSource is the hub's defaults, without their tests unless withTests.
func embeddedSource(withTests bool) (policy.Source, error) {
	src, err := admission.EmbeddedSource()
	if err != nil {
		return policy.Source{}, err
	}
	if !withTests {
		src.Files = slices.DeleteFunc(src.Files, func(f policy.File) bool { return f.IsTest() })
	}
	return src, nil
}

// packageOf is the package a file declares, "" when it does not parse (the compiler says why).
func packageOf(f policy.File) string {
	m, err := ast.ParseModuleWithOpts(f.Name, f.Content, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil || m.Package == nil {
		return ""
	}
	return strings.TrimPrefix(m.Package.Path.String(), "data.")
}

// overlapWithDefaults refuses a file declaring one of the embedded defaults' packages: the
// hub refuses a source that redefines another's package, and testing both together would
// only report conflicting rules.
func overlapWithDefaults(embedded policy.Source, sources []policy.Source) error {
	owned := map[string]string{}
	for _, f := range embedded.Files {
		if !f.IsTest() {
			if pkg := packageOf(f); pkg != "" {
				owned[pkg] = f.Name
			}
		}
	}
	var errs []error
	for _, s := range sources {
		for _, f := range s.Files {
			if f.IsTest() {
				continue
			}
			if pkg := packageOf(f); owned[pkg] != "" {
				errs = append(errs, fmt.Errorf("%s: package %s is one of the hub's embedded defaults (policies/%s); a policy source cannot redefine it (to test a copy of the defaults, pass --no-defaults)",
					filepath.Join(s.Name, f.Name), pkg, owned[pkg]))
			}
		}
	}
	return errors.Join(errs...)
}

// checkPolicies tests the sources (with the embedded defaults, whose own tests are not run,
// when withDefaults) and compiles them as the hub does, printing what opa test prints. The
// error says what failed; the details are in the output.
func checkPolicies(ctx context.Context, w io.Writer, sources []policy.Source, withDefaults, verbose bool) error {
	all := sources
	if withDefaults {
		embedded, err := embeddedSource(false)
		if err != nil {
			return err
		}
		if err := overlapWithDefaults(embedded, sources); err != nil {
			return err
		}
		all = append([]policy.Source{embedded}, sources...)
	}
	results, err := policy.Test(ctx, all, nil)
	if err != nil {
		return fmt.Errorf("compiling policies: %w", err)
	}
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.Name
	}
	if len(results) == 0 {
		fmt.Fprintf(w, "no tests found in %s\n", strings.Join(names, ", "))
		return fmt.Errorf("no tests in %s: every policy needs tests (test_* rules in *_test.rego files beside it)", strings.Join(names, ", "))
	}
	printTestResults(w, results, verbose)
	failed := policy.Failed(results)

	// The hub compiles without running tests when it decides what to serve; what it refuses
	// then is what a test run does not catch (match rules, served resources, ownership).
	set, compileErr := policy.Compile(ctx, all, policy.Options{SkipTests: true})
	if compileErr != nil {
		fmt.Fprintf(w, "the hub would refuse these policies:\n  %s\n", strings.ReplaceAll(compileErr.Error(), "\n", "\n  "))
	} else if verbose {
		printPolicies(w, set, names)
	}
	switch {
	case len(failed) > 0 && compileErr != nil:
		return fmt.Errorf("%d of %d tests failed, and %w", len(failed), len(results), compileErr)
	case len(failed) > 0:
		return fmt.Errorf("%d of %d tests failed", len(failed), len(results))
	case compileErr != nil:
		return compileErr
	}
	return nil
}

// printTestResults prints as opa test: failures (every result when verbose), then a summary.
func printTestResults(w io.Writer, results []policy.TestResult, verbose bool) {
	results = slices.Clone(results)
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].File != results[j].File {
			return results[i].File < results[j].File
		}
		return locationRow(results[i].Location) < locationRow(results[j].Location)
	})
	var pass, fail, skip int
	file := ""
	for _, r := range results {
		outcome := "PASS"
		switch {
		case r.Skip:
			outcome, skip = "SKIPPED", skip+1
		case r.Err != nil:
			outcome, fail = "ERROR", fail+1
		case !r.Pass:
			outcome, fail = "FAIL", fail+1
		default:
			pass++
		}
		if !verbose && (r.Pass || r.Skip) {
			continue
		}
		if verbose && r.File != file {
			if file != "" {
				fmt.Fprintln(w)
			}
			file = r.File
			fmt.Fprintf(w, "%s:\n", file)
		}
		fmt.Fprintf(w, "%s.%s: %s (%s)\n", r.Package, r.Name, outcome, roundDur(r.Duration))
		if !r.Pass && !r.Skip {
			fmt.Fprintf(w, "  at %s\n", r.Location)
			if r.Err != nil {
				fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(r.Err.Error(), "\n", "\n  "))
			}
		}
	}
	if verbose || fail > 0 {
		fmt.Fprintln(w, strings.Repeat("-", 80))
	}
	total := len(results)
	if fail == 0 {
		fmt.Fprintf(w, "PASS: %d/%d\n", pass, total)
	} else {
		if pass > 0 {
			fmt.Fprintf(w, "PASS: %d/%d\n", pass, total)
		}
		fmt.Fprintf(w, "FAIL: %d/%d\n", fail, total)
	}
	if skip > 0 {
		fmt.Fprintf(w, "SKIPPED: %d/%d\n", skip, total)
	}
}

// locationRow is the line of a "file:line" location, 0 when there is none.
func locationRow(loc string) int {
	n, _ := strconv.Atoi(loc[strings.LastIndex(loc, ":")+1:])
	return n
}

// printPolicies lists the policies of the given sources with what they match.
func printPolicies(w io.Writer, set *policy.Set, sources []string) {
	var lines []string
	for _, p := range set.Policies() {
		if !slices.Contains(sources, p.Source) {
			continue
		}
		var ms []string
		for _, m := range p.Match {
			ms = append(ms, fmt.Sprintf("%s/{%s} %s", m.Group, strings.Join(m.Resources, ","), strings.Join(m.Operations, ",")))
		}
		lines = append(lines, fmt.Sprintf("  %s (%s): %s", p.Name, p.Source, strings.Join(ms, "; ")))
	}
	var gateway []string
	for _, p := range set.GatewayPolicies() {
		if slices.Contains(sources, p.Source) {
			gateway = append(gateway, fmt.Sprintf("  %s (%s)", p.Name, p.Source))
		}
	}
	if len(lines) == 0 && len(gateway) == 0 {
		fmt.Fprintln(w, "no policy (package under flotilla.admission or flotilla.gateway) in these files")
		return
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "policies:")
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	if len(gateway) > 0 {
		fmt.Fprintln(w, "gateway policies:")
		for _, l := range gateway {
			fmt.Fprintln(w, l)
		}
	}
}

// --- flotilla policy eval ---

type policyEvalOptions struct {
	file, output, authorize, kubeconfig string
	featureGates, clusterNamespaces     []string
	timeout                             time.Duration
}

func newPolicyEvalCommand() *cobra.Command {
	var o policyEvalOptions
	cmd := &cobra.Command{
		Use:   "eval -f REQUEST [DIR|FILE ...]",
		Short: "Show what the hub's policies decide for one admission or gateway request",
		Long: `eval reads an admission request and evaluates it with the hub's embedded default policies
plus the given .rego files and directories (each one source, as one ConfigMap is on the
hub), as the hub's admission webhook does; tests are not run (see flotilla policy
test). REQUEST (-f; - for standard input) is an AdmissionReview (admission.k8s.io/v1) or a
bare AdmissionRequest, in JSON or YAML.

REQUEST may instead be a request of the hub's cluster-gateway (kind: GatewayRequest, with
the gateway policies' input: user, cluster and request, see policies/README.md); it is
then judged by the gateway policies (flotilla.gateway.*), as the gateway does.
--feature-gates and --cluster-namespaces do not apply to it.

It prints ALLOWED or DENIED, then each denial as the user would see it
("policy <name> (<source>): <message>"), the warnings, the evaluation errors (a policy
that fails denies: policies fail closed), every question a policy asked
flotilla.authorized with its answer, and the policies evaluated (or that none matches).
-o json prints the same as one JSON object.

The input document is built as the hub builds it:
  --feature-gates sets gates of the hub in input.featureGates (the others keep their
    defaults), e.g. NilExecutorValidating=true
  --cluster-namespaces lists the namespaces that are cluster namespaces (a ManagedCluster
    of that name exists), for input.clusterNamespace
  --authorize says how flotilla.authorized answers:
    deny   (default) every question is answered false
    allow  every question is answered true
    hub    the hub of --kubeconfig answers with SubjectAccessReviews, as the hub does;
           without --cluster-namespaces the request's namespace is then a cluster
           namespace when a ManagedCluster of that name exists on the hub
As on the hub, requests of members of system:masters are judged by the embedded defaults
only, and a request for a subresource (status) reaches no policy.

Exit status: 0 when the request is allowed, 1 when a policy denies it, 2 on an error (an
unreadable request, a policy that does not compile, an evaluation error, the hub
unreachable).`,
		Example: `  # Would alice's ManifestWork pass, with flotilla.authorized answering false?
  flotilla policy eval -f review.json

  # With a team's policies and the hub answering the authorization questions
  flotilla policy eval -f review.yaml ./team-policies/ --authorize=hub --kubeconfig hub.kubeconfig

  # Would the gateway let alice delete a ConfigMap on cluster1? (kind: GatewayRequest)
  flotilla policy eval -f gateway-request.yaml ./team-policies/

  # With the NilExecutorValidating gate of the hub, in a cluster namespace
  flotilla policy eval -f work-request.yaml --feature-gates NilExecutorValidating=true --cluster-namespaces cluster1 --authorize=allow`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStatus(exitError, runPolicyEval(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), args, o))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withStatus(exitError, err) })
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "AdmissionReview or AdmissionRequest, JSON or YAML, or - for standard input (required)")
	f.StringVarP(&o.output, "output", "o", "", "output format: text (default) or json")
	f.StringVar(&o.authorize, "authorize", "deny", "how flotilla.authorized answers: deny, allow or hub")
	f.StringSliceVar(&o.featureGates, "feature-gates", nil, "comma-separated Name=true|false pairs for input.featureGates, e.g. NilExecutorValidating=true")
	f.StringSliceVar(&o.clusterNamespaces, "cluster-namespaces", nil, "comma-separated namespaces that belong to ManagedClusters (input.clusterNamespace)")
	f.DurationVar(&o.timeout, "timeout", admission.DefaultEvalTimeout, "bound on the evaluation (the hub denies a request whose policies take longer than 3s)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server, with --authorize=hub (default: $KUBECONFIG or ~/.kube/config)")
	return cmd
}

// authQuestion is one call of flotilla.authorized and its answer.
type authQuestion struct {
	Policy     string            `json:"policy"`
	User       policy.UserInfo   `json:"user"`
	Attributes policy.Attributes `json:"attributes"`
	Allowed    bool              `json:"allowed"`
	Error      string            `json:"error,omitempty"`
}

// recordingAuthorizer answers through next and remembers every question, for the policy
// being evaluated.
type recordingAuthorizer struct {
	next      policy.Authorizer
	mu        sync.Mutex
	policy    string
	questions []authQuestion
}

func (r *recordingAuthorizer) Authorized(ctx context.Context, user policy.UserInfo, attrs policy.Attributes) (bool, error) {
	ok, err := r.next.Authorized(ctx, user, attrs)
	q := authQuestion{User: user, Attributes: attrs, Allowed: ok && err == nil}
	if err != nil {
		q.Error = err.Error()
	}
	r.mu.Lock()
	q.Policy = r.policy
	r.questions = append(r.questions, q)
	r.mu.Unlock()
	return ok, err
}

func (r *recordingAuthorizer) evaluating(name string) {
	r.mu.Lock()
	r.policy = name
	r.mu.Unlock()
}

// evalReport is what eval prints, in text or JSON.
type evalReport struct {
	Allowed        bool           `json:"allowed"`
	Request        evalRequest    `json:"request"`
	Note           string         `json:"note,omitempty"`
	Evaluated      []evalPolicy   `json:"evaluated"`
	Denials        []evalMessage  `json:"denials"`
	Warnings       []evalMessage  `json:"warnings"`
	Errors         []evalError    `json:"errors"`
	Authorize      string         `json:"authorize"`
	Authorizations []authQuestion `json:"authorizations"`
}

type evalRequest struct {
	Operation        string `json:"operation"`
	Group            string `json:"group"`
	Resource         string `json:"resource"`
	Subresource      string `json:"subresource,omitempty"`
	Namespace        string `json:"namespace,omitempty"`
	Name             string `json:"name,omitempty"`
	User             string `json:"user"`
	ClusterNamespace string `json:"clusterNamespace"`
	// Of a GatewayRequest (Operation is then its verb).
	Cluster string `json:"cluster,omitempty"`
	Method  string `json:"method,omitempty"`
	Path    string `json:"path,omitempty"`
}

type evalPolicy struct {
	Policy string `json:"policy"`
	Source string `json:"source"`
}

type evalMessage struct {
	Policy  string `json:"policy"`
	Source  string `json:"source"`
	Message string `json:"message"`
}

type evalError struct {
	Policy  string `json:"policy"`
	Source  string `json:"source"`
	Timeout bool   `json:"timeout"`
	Error   string `json:"error"`
}

func runPolicyEval(ctx context.Context, stdin io.Reader, stdout io.Writer, args []string, o policyEvalOptions) error {
	if o.file == "" {
		return errors.New("-f/--filename is required (an AdmissionReview or AdmissionRequest)")
	}
	if o.output != "" && o.output != "text" && o.output != "json" {
		return fmt.Errorf("-o/--output %q: want text or json", o.output)
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout %s must be positive", o.timeout)
	}
	gates, err := parsePolicyFeatureGates(o.featureGates)
	if err != nil {
		return err
	}
	data, name, err := readRequestFile(o.file, stdin)
	if err != nil {
		return err
	}
	if gw, err := parseGatewayRequest(name, data); gw != nil || err != nil {
		if err != nil {
			return err
		}
		return runGatewayEval(ctx, stdout, gw, args, o)
	}
	req, err := parseAdmissionRequest(name, data)
	if err != nil {
		return err
	}
	sources, err := policySourcesFromArgs(args)
	if err != nil {
		return err
	}
	embedded, err := embeddedSource(false)
	if err != nil {
		return err
	}

	answer, hub, err := evalAuthorizer(o)
	if err != nil {
		return err
	}
	rec := &recordingAuthorizer{next: answer}

	clusterNS := map[string]bool{}
	for _, ns := range o.clusterNamespaces {
		clusterNS[ns] = true
	}
	if o.clusterNamespaces == nil && hub != nil && req.Namespace != "" {
		err := hub.Get(ctx, client.ObjectKey{Name: req.Namespace}, &clusterv1.ManagedCluster{})
		switch {
		case err == nil:
			clusterNS[req.Namespace] = true
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("looking up ManagedCluster %s (is the request's namespace a cluster namespace?): %w", req.Namespace, err)
		}
	}
	in, err := policy.NewInput(req, policy.InputOptions{FeatureGates: gates, IsClusterNamespace: func(ns string) bool { return clusterNS[ns] }})
	if err != nil {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	set, err := policy.Compile(ctx, append([]policy.Source{embedded}, sources...), policy.Options{Authorizer: rec, SkipTests: true})
	if err != nil {
		return fmt.Errorf("compiling policies: %w", err)
	}

	rep := evalReport{
		Authorize: o.authorize, Evaluated: []evalPolicy{}, Denials: []evalMessage{}, Warnings: []evalMessage{},
		Errors: []evalError{}, Authorizations: []authQuestion{},
		Request: evalRequest{
			Operation: string(req.Operation), Group: req.Resource.Group, Resource: req.Resource.Resource,
			Subresource: req.SubResource, Namespace: req.Namespace, Name: req.Name, User: req.UserInfo.Username,
		},
	}
	rep.Request.ClusterNamespace, _ = in.Doc["clusterNamespace"].(string)
	matching := set.Matching(req.Resource.Group, req.Resource.Resource, string(req.Operation))
	privileged := admission.Privileged(req.UserInfo.Username, req.UserInfo.Groups, "")
	switch {
	case req.SubResource != "":
		rep.Note = fmt.Sprintf("the hub sends no subresource request (%s/%s) to policies", req.Resource.Resource, req.SubResource)
		matching = nil
	case len(matching) == 0:
		rep.Note = fmt.Sprintf("no policy matches %s/%s %s", req.Resource.Group, req.Resource.Resource, req.Operation)
	case privileged:
		rep.Note = "the user is in system:masters: only the embedded defaults judge its requests, as on the hub"
	}
	return judge(ctx, stdout, o, set, matching, privileged, in, rec, &rep)
}

// judge evaluates policies on in (skipping those the hub skips for a privileged user) one at a
// time, so the report says which asked what; it prints rep as o asks and returns the exit
// status: denied, or an evaluation error.
func judge(ctx context.Context, stdout io.Writer, o policyEvalOptions, set *policy.Set, policies []*policy.Policy, privileged bool, in *policy.Input, rec *recordingAuthorizer, rep *evalReport) error {
	evalCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	for _, p := range policies {
		if admission.SkipFor(privileged)(p) {
			continue
		}
		rec.evaluating(p.Name)
		d, err := set.EvaluatePolicies(evalCtx, []*policy.Policy{p}, in, nil)
		if err != nil {
			return err
		}
		rep.Evaluated = append(rep.Evaluated, evalPolicy{Policy: p.Name, Source: p.Source})
		for _, dn := range d.Denials {
			rep.Denials = append(rep.Denials, evalMessage(dn))
		}
		for _, wn := range d.Warnings {
			rep.Warnings = append(rep.Warnings, evalMessage(wn))
		}
		for _, e := range d.Errors {
			rep.Errors = append(rep.Errors, evalError{Policy: e.Policy, Source: e.Source, Timeout: e.Timeout, Error: e.Error()})
		}
	}
	rep.Authorizations = append(rep.Authorizations, rec.questions...)
	rep.Allowed = len(rep.Denials) == 0 && len(rep.Errors) == 0

	if o.output == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		printEvalReport(stdout, rep)
	}
	switch {
	case len(rep.Errors) > 0:
		var msgs []string
		for _, e := range rep.Errors {
			msgs = append(msgs, e.Error)
		}
		return withStatus(exitError, fmt.Errorf("request denied: %s", strings.Join(msgs, "; ")))
	case len(rep.Denials) > 0:
		var names []string
		for _, d := range rep.Denials {
			if !slices.Contains(names, d.Policy) {
				names = append(names, d.Policy)
			}
		}
		return withStatus(exitDenied, fmt.Errorf("request denied by policy %s", strings.Join(names, ", ")))
	}
	return nil
}

// evalAuthorizer is how flotilla.authorized answers (--authorize), and the hub's client with
// --authorize=hub.
func evalAuthorizer(o policyEvalOptions) (policy.Authorizer, client.Client, error) {
	switch o.authorize {
	case "deny", "allow":
		allowed := o.authorize == "allow"
		return policy.AuthorizerFunc(func(context.Context, policy.UserInfo, policy.Attributes) (bool, error) { return allowed, nil }), nil, nil
	case "hub":
		c, kube, err := hubClients(o.kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		return policy.ReviewAuthorizer{Reviews: kube.AuthorizationV1().SubjectAccessReviews()}, c, nil
	}
	return nil, nil, fmt.Errorf("--authorize %q: want deny, allow or hub", o.authorize)
}

func printEvalReport(w io.Writer, rep *evalReport) {
	if rep.Allowed {
		fmt.Fprintln(w, "ALLOWED")
	} else {
		fmt.Fprintln(w, "DENIED")
	}
	r := rep.Request
	object := r.Name
	if r.Namespace != "" {
		object = r.Namespace + "/" + r.Name
	}
	resource := r.Resource
	if r.Subresource != "" {
		resource += "/" + r.Subresource
	}
	if r.Cluster != "" {
		fmt.Fprintf(w, "gateway request: %s %s (verb %s) to cluster %s by %s\n", r.Method, r.Path, r.Operation, r.Cluster, r.User)
	} else {
		fmt.Fprintf(w, "request: %s %s/%s %s by %s (clusterNamespace %q)\n", r.Operation, r.Group, resource, object, r.User, r.ClusterNamespace)
	}
	if len(rep.Denials) > 0 {
		fmt.Fprintln(w, "denials:")
		for _, d := range rep.Denials {
			fmt.Fprintf(w, "  policy %s (%s): %s\n", d.Policy, d.Source, d.Message)
		}
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintln(w, "warnings:")
		for _, d := range rep.Warnings {
			fmt.Fprintf(w, "  policy %s (%s): %s\n", d.Policy, d.Source, d.Message)
		}
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintln(w, "errors (each denies the request: policies fail closed):")
		for _, e := range rep.Errors {
			msg := strings.TrimPrefix(e.Error, "policy "+e.Policy+": ")
			fmt.Fprintf(w, "  policy %s (%s): %s\n", e.Policy, e.Source, strings.ReplaceAll(msg, "\n", "\n  "))
		}
	}
	if len(rep.Authorizations) > 0 {
		fmt.Fprintf(w, "flotilla.authorized (--authorize=%s):\n", rep.Authorize)
		for _, q := range rep.Authorizations {
			fmt.Fprintf(w, "  policy %s asked: %s -> %s\n", q.Policy, describeQuestion(q), answerOf(q))
		}
	}
	if rep.Note != "" {
		fmt.Fprintln(w, rep.Note)
	}
	if len(rep.Evaluated) > 0 {
		var ps []string
		for _, p := range rep.Evaluated {
			ps = append(ps, fmt.Sprintf("%s (%s)", p.Policy, p.Source))
		}
		fmt.Fprintf(w, "evaluated: %s\n", strings.Join(ps, ", "))
	}
}

// describeQuestion is "may USER [groups ...] VERB ATTRS" with every attribute set.
func describeQuestion(q authQuestion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "may %s", q.User.Username)
	if len(q.User.Groups) > 0 {
		fmt.Fprintf(&b, " (groups %s)", strings.Join(q.User.Groups, ","))
	}
	a := q.Attributes
	fmt.Fprintf(&b, " %s", a.Verb)
	for _, kv := range [][2]string{{"group", a.Group}, {"resource", a.Resource}, {"subresource", a.Subresource}, {"name", a.Name}, {"namespace", a.Namespace}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	return b.String()
}

func answerOf(q authQuestion) string {
	if q.Error != "" {
		return "error: " + q.Error
	}
	return strconv.FormatBool(q.Allowed)
}

// parsePolicyFeatureGates is input.featureGates as the hub reports it: every gate of the hub
// (manager.NewFeatureGate) at its default, then the given Name=bool pairs.
func parsePolicyFeatureGates(pairs []string) (map[string]bool, error) {
	gate, err := manager.NewFeatureGate()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for f, spec := range gate.GetAll() {
		if f != "AllAlpha" && f != "AllBeta" {
			out[string(f)] = spec.Default
		}
	}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		name = strings.TrimSpace(name)
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("--feature-gates %q: want Name=true or Name=false", p)
		}
		if _, known := out[name]; !known {
			return nil, fmt.Errorf("--feature-gates %q: the hub has no gate %s (its gates: %s)", p, name, strings.Join(slices.Sorted(maps.Keys(out)), ", "))
		}
		out[name] = b
	}
	return out, nil
}

// readAdmissionRequest reads an AdmissionReview (admission.k8s.io/v1) or a bare
// AdmissionRequest, JSON or YAML, strictly: an unknown field is an error.
func readAdmissionRequest(path string, stdin io.Reader) (*admissionv1.AdmissionRequest, error) {
	data, name, err := readRequestFile(path, stdin)
	if err != nil {
		return nil, err
	}
	return parseAdmissionRequest(name, data)
}

// readRequestFile reads -f: a file, or standard input for "-"; name is what errors call it.
func readRequestFile(path string, stdin io.Reader) (data []byte, name string, err error) {
	name = path
	if path == "-" {
		name = "standard input"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, name, fmt.Errorf("reading the request: %w", err)
	}
	return data, name, nil
}

// parseAdmissionRequest parses an AdmissionReview or a bare AdmissionRequest read from name.
func parseAdmissionRequest(name string, data []byte) (*admissionv1.AdmissionRequest, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(j, &probe); err != nil || probe == nil {
		return nil, fmt.Errorf("%s: want an AdmissionReview or an AdmissionRequest object", name)
	}
	var kind, apiVersion string
	_ = json.Unmarshal(probe["kind"], &kind) // an AdmissionRequest's kind is an object
	_ = json.Unmarshal(probe["apiVersion"], &apiVersion)
	var req *admissionv1.AdmissionRequest
	field := ""
	switch {
	case kind == "AdmissionReview":
		if apiVersion != admissionv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("%s: apiVersion %q: want %s", name, apiVersion, admissionv1.SchemeGroupVersion)
		}
		var review admissionv1.AdmissionReview
		if err := strictJSON(j, &review); err != nil {
			return nil, fmt.Errorf("%s: AdmissionReview: %w", name, err)
		}
		if review.Request == nil {
			return nil, fmt.Errorf("%s: AdmissionReview has no request", name)
		}
		req, field = review.Request, "request."
	case kind != "":
		return nil, fmt.Errorf("%s: kind %s: want an AdmissionReview (%s) or a bare AdmissionRequest", name, kind, admissionv1.SchemeGroupVersion)
	default:
		req = &admissionv1.AdmissionRequest{}
		if err := strictJSON(j, req); err != nil {
			return nil, fmt.Errorf("%s: AdmissionRequest: %w", name, err)
		}
	}
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
	case "":
		return nil, fmt.Errorf("%s: %soperation is missing (CREATE, UPDATE or DELETE)", name, field)
	default:
		return nil, fmt.Errorf("%s: %soperation %q: want CREATE, UPDATE or DELETE", name, field, req.Operation)
	}
	if req.Resource.Resource == "" {
		return nil, fmt.Errorf("%s: %sresource.resource is missing (e.g. {group: work.open-cluster-management.io, version: v1, resource: manifestworks})", name, field)
	}
	return req, nil
}

func strictJSON(j []byte, into any) error {
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	return d.Decode(into)
}

// --- flotilla policy push ---

type policyPushOptions struct {
	name, namespace, kubeconfig string
	wait                        time.Duration
	force                       bool
}

func newPolicyPushCommand() *cobra.Command {
	var o policyPushOptions
	cmd := &cobra.Command{
		Use:   "push FILE|DIR ... [--name NAME]",
		Short: "Test policies, store them in a ConfigMap on the hub and wait for the hub's verdict",
		Long: `push installs or updates policies on a hub:

  1. reads the .rego files given (directories are walked recursively) and tests them
     with the embedded defaults as flotilla policy test does, then compiles them as the
     hub will load them; a failure stops the push (--force pushes anyway);
  2. server-side-applies (field manager flotilla-cli) the ConfigMap NAMESPACE/NAME,
     labelled flotilla.dev/policy=true, with one data key per file: its base name, so
     two files of the same name are an error. Files removed since the last push are
     removed from the ConfigMap;
  3. unless --wait is 0, waits for the Event the hub records on the ConfigMap when it
     has loaded (PolicyLoaded) or refused (PolicyRejected) this version, and prints it.
     A PolicyRejected Event (the policies failed to compile or to pass their tests on
     the hub, e.g. a package another ConfigMap defines) makes push fail with its message;
     the hub then keeps the ConfigMap's last good version in force.

NAME defaults to the first argument's base name without its extension, lowercased and
made a valid ConfigMap name (team_a.rego: team-a).`,
		Example: `  # A directory of policies and tests, as ConfigMap team-policies
  flotilla policy push ./team-policies/ --kubeconfig hub.kubeconfig

  # Two files under another name, without waiting for the hub
  flotilla policy push no_public_lb.rego no_public_lb_test.rego --name network --wait 0`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyPush(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "ConfigMap name (default: derived from the first argument)")
	f.StringVarP(&o.namespace, "namespace", "n", policy.DefaultNamespace, "the hub's namespace, where it reads policy ConfigMaps")
	f.DurationVar(&o.wait, "wait", 30*time.Second, "how long to wait for the hub's PolicyLoaded or PolicyRejected Event (0: do not wait)")
	f.BoolVar(&o.force, "force", false, "push even when the local tests or compilation fail")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the hub API server (default: $KUBECONFIG or ~/.kube/config)")
	return cmd
}

// policyFile is one file to push: its path and ConfigMap key.
type policyFile struct {
	path, key, content string
}

// readPolicyFiles reads the .rego files of the arguments (directories recursively), keyed by
// base name.
func readPolicyFiles(args []string) ([]policyFile, error) {
	var files []policyFile
	byKey := map[string]string{}
	add := func(path string) error {
		if !strings.HasSuffix(path, ".rego") {
			return fmt.Errorf("%s: not a .rego file", path)
		}
		key := filepath.Base(path)
		if prev, dup := byKey[key]; dup {
			return fmt.Errorf("%s and %s have the same file name %s: a ConfigMap holds one data key per file name; rename one", prev, path, key)
		}
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return fmt.Errorf("%s: %q is not a valid ConfigMap data key: %s", path, key, strings.Join(errs, "; "))
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		byKey[key] = path
		files = append(files, policyFile{path: path, key: key, content: string(b)})
		return nil
	}
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if err := add(arg); err != nil {
				return nil, err
			}
			continue
		}
		n := len(files)
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") {
				return err
			}
			return add(p)
		})
		if err != nil {
			return nil, err
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s: no .rego file in the directory", arg)
		}
	}
	return files, nil
}

// policyConfigMapName derives a ConfigMap name from a path: its base name (without extension
// for a file), lowercased, other characters than a-z, 0-9, '-' and '.' replaced by '-'.
func policyConfigMapName(path string, isDir bool) (string, error) {
	base := path
	if abs, err := filepath.Abs(path); err == nil {
		base = abs
	}
	base = filepath.Base(base)
	if !isDir {
		base = strings.TrimSuffix(base, filepath.Ext(base))
	}
	var labels []string
	for _, l := range strings.Split(strings.ToLower(base), ".") {
		l = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
				return r
			}
			return '-'
		}, l)
		if l = strings.Trim(l, "-"); l != "" {
			labels = append(labels, l)
		}
	}
	name := strings.Join(labels, ".")
	if len(name) > validation.DNS1123SubdomainMaxLength {
		name = strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength], "-.")
	}
	if name == "" || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", fmt.Errorf("cannot make a ConfigMap name of %q: pass --name", path)
	}
	return name, nil
}

// policyConfigMap is the ConfigMap holding files.
func policyConfigMap(namespace, name string, files []policyFile) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name,
			Labels: map[string]string{policy.ConfigMapLabel: policy.ConfigMapLabelValue, "app.kubernetes.io/managed-by": "flotilla"},
		},
		Data: map[string]string{},
	}
	for _, f := range files {
		cm.Data[f.key] = f.content
	}
	return cm
}

func runPolicyPush(ctx context.Context, stdout, stderr io.Writer, args []string, o policyPushOptions) error {
	if o.wait < 0 {
		return fmt.Errorf("--wait %s must not be negative", o.wait)
	}
	if errs := validation.IsDNS1123Subdomain(o.namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q: %s", o.namespace, strings.Join(errs, "; "))
	}
	files, err := readPolicyFiles(args)
	if err != nil {
		return err
	}
	name := o.name
	if name == "" {
		st, err := os.Stat(args[0])
		if err != nil {
			return err
		}
		if name, err = policyConfigMapName(args[0], st.IsDir()); err != nil {
			return err
		}
	} else if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("--name %q is not a valid ConfigMap name: %s", name, strings.Join(errs, "; "))
	}
	cm := policyConfigMap(o.namespace, name, files)
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	if size > maxConfigMapPayload {
		return fmt.Errorf("the policies of ConfigMap %s/%s take %d bytes, more than a ConfigMap holds (%d): split them into several ConfigMaps", o.namespace, name, size, maxConfigMapPayload)
	}

	// Check what the hub will load: this ConfigMap's source beside the defaults.
	if err := checkPolicies(ctx, stderr, []policy.Source{policy.SourceFromConfigMap(cm)}, true, false); err != nil {
		if !o.force {
			return fmt.Errorf("local check failed, nothing pushed (--force pushes anyway): %w", err)
		}
		fmt.Fprintf(stderr, "local check failed; pushing anyway (--force): %v\n", err)
	}

	cfg, err := loadRESTConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("hub client: %w", err)
	}
	return pushPolicyConfigMap(ctx, kube, stdout, stderr, cm, o.wait)
}

// pushPolicyConfigMap applies cm and, when wait > 0, waits for the hub's verdict on it.
func pushPolicyConfigMap(ctx context.Context, kube kubernetes.Interface, stdout, stderr io.Writer, cm *corev1.ConfigMap, wait time.Duration) error {
	ns, name := cm.Namespace, cm.Name
	ref := fmt.Sprintf("ConfigMap %s/%s", ns, name)
	cms := kube.CoreV1().ConfigMaps(ns)
	prevRV := ""
	switch prev, err := cms.Get(ctx, name, metav1.GetOptions{}); {
	case err == nil:
		prevRV = prev.ResourceVersion
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	// The Events recorded from now on are listed, then watched from the list's version, so
	// none is missed between the apply and the watch. The events.k8s.io/v1 API stores its
	// Events as core/v1 Events too: both are seen here (regarding = involvedObject).
	events := kube.CoreV1().Events(ns)
	selector := fields.Set{"involvedObject.kind": "ConfigMap", "involvedObject.name": name}.AsSelector().String()
	var before *corev1.EventList
	if wait > 0 {
		var err error
		if before, err = events.List(ctx, metav1.ListOptions{FieldSelector: selector}); err != nil {
			return fmt.Errorf("listing the Events of %s (to wait for the hub's verdict; --wait 0 does not wait): %w", ref, err)
		}
	}

	ac := corev1ac.ConfigMap(name, ns).WithLabels(cm.Labels).WithData(cm.Data)
	applied, err := cms.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: policyFieldManager, Force: true})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("applying %s: namespace %q does not exist (is it the hub's namespace? pass --namespace): %w", ref, ns, err)
		}
		return fmt.Errorf("applying %s: %w", ref, err)
	}
	verb := "configured"
	switch {
	case prevRV == "":
		verb = "created"
	case prevRV == applied.ResourceVersion:
		verb = "unchanged"
	}
	keys := slices.Sorted(maps.Keys(cm.Data))
	fmt.Fprintf(stdout, "configmap %s/%s %s (resourceVersion %s): %s\n", ns, name, verb, applied.ResourceVersion, strings.Join(keys, ", "))
	if wait == 0 {
		return nil
	}

	rv := applied.ResourceVersion
	var verdict *corev1.Event
	if verb == "unchanged" {
		// No new version, so no new verdict: the hub's last one on this version stands.
		for i := range before.Items {
			e := &before.Items[i]
			if isPolicyVerdict(e, ns, name) && (e.InvolvedObject.ResourceVersion == rv || e.InvolvedObject.ResourceVersion == "") &&
				(verdict == nil || admin.EventTime(e).After(admin.EventTime(verdict))) {
				verdict = e
			}
		}
	}
	if verdict == nil {
		fmt.Fprintf(stderr, "waiting up to %s for the hub to load %s\n", wait, ref)
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		lw := &eventWatcher{events: events, selector: selector}
		rw, err := watchtools.NewRetryWatcherWithContext(wctx, before.ResourceVersion, lw)
		if err != nil {
			return fmt.Errorf("watching the Events of %s: %w", ref, err)
		}
		defer rw.Stop()
		ev, err := watchtools.UntilWithoutRetry(wctx, rw, func(ev watch.Event) (bool, error) {
			switch ev.Type {
			case watch.Added, watch.Modified:
			case watch.Error:
				return false, apierrors.FromObject(ev.Object)
			default:
				return false, nil
			}
			e, ok := ev.Object.(*corev1.Event)
			if !ok || !isPolicyVerdict(e, ns, name) {
				return false, nil
			}
			// A new Event about another version is the verdict on an earlier push; an Event
			// updated (a repeat counted) or without a version is a verdict since the list.
			return e.InvolvedObject.ResourceVersion == rv || e.InvolvedObject.ResourceVersion == "" || ev.Type == watch.Modified, nil
		})
		if err != nil {
			if errors.Is(err, watchtools.ErrWatchClosed) || wctx.Err() != nil && ctx.Err() == nil {
				return fmt.Errorf("%s: no %s or %s Event within %s; is a hub with policy admission running against this cluster, in namespace %s? (kubectl get events -n %s --field-selector involvedObject.name=%s)",
					ref, policy.EventReasonLoaded, policy.EventReasonRejected, wait, ns, ns, name)
			}
			return fmt.Errorf("waiting for the hub's verdict on %s: %w", ref, err)
		}
		verdict = ev.Object.(*corev1.Event)
	}
	fmt.Fprintf(stdout, "%s: %s\n", verdict.Reason, verdict.Message)
	if verdict.Reason == policy.EventReasonRejected {
		return fmt.Errorf("the hub rejected %s (its last good version, if any, stays in force): %s", ref, verdict.Message)
	}
	return nil
}

func isPolicyVerdict(e *corev1.Event, namespace, name string) bool {
	o := e.InvolvedObject
	return o.Kind == "ConfigMap" && o.Name == name && (o.Namespace == "" || o.Namespace == namespace) &&
		(e.Reason == policy.EventReasonLoaded || e.Reason == policy.EventReasonRejected)
}

// eventWatcher watches a namespace's Events of one object, for a RetryWatcher.
type eventWatcher struct {
	events interface {
		Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	}
	selector string
}

func (w *eventWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.FieldSelector = w.selector
	return w.events.Watch(ctx, opts)
}
