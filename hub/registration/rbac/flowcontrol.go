package rbac

import (
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "github.com/flotilla-dev/flotilla/core/apis/cluster/v1"
)

// API Priority and Fairness for the managed clusters' agents. Without these, every agent's
// request falls into kube-apiserver's global-default priority level (about 8% of its seats):
// make bench-fleet at 5,000 clusters, with each cluster applying 10 works, queued 7,000
// requests there, rejected 64,000 with 429 and let 288 live clusters' leases lapse into
// Available=Unknown. Heartbeats get a level of their own, so that no amount of agent traffic
// delays a lease (as the kubelets' node leases have node-high), and the agents' other requests
// a level large enough for a fleet, queued fairly per agent.
const (
	// HeartbeatsName names the FlowSchema and PriorityLevelConfiguration of the agents' Lease
	// requests.
	HeartbeatsName = "flotilla-managed-cluster-heartbeats"
	// AgentsName names those of the agents' other requests.
	AgentsName = "flotilla-managed-cluster-agents"
	// BootstrapName names those of the bootstrap identities' requests (agents joining).
	BootstrapName = "flotilla-managed-cluster-bootstrap"
)

// FlowControl are the PriorityLevelConfigurations and FlowSchemas the hub installs.
func FlowControl() []client.Object {
	agents := []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup,
		Group: &flowcontrolv1.GroupSubject{Name: clusterv1.ManagedClustersGroup}}}
	level := func(name string, shares int32, queues, handSize, queueLength int32) *flowcontrolv1.PriorityLevelConfiguration {
		return &flowcontrolv1.PriorityLevelConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
				Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					NominalConcurrencyShares: ptr.To(shares),
					LendablePercent:          ptr.To[int32](50),
					LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
						Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: handSize, QueueLengthLimit: queueLength}},
				},
			},
		}
	}
	schema := func(name string, precedence int32, rules flowcontrolv1.PolicyRulesWithSubjects) *flowcontrolv1.FlowSchema {
		return &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: flowcontrolv1.FlowSchemaSpec{
				PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
				MatchingPrecedence:         precedence,
				// Each agent (its user) is its own flow: one busy cluster cannot crowd out the rest.
				DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
				Rules:               []flowcontrolv1.PolicyRulesWithSubjects{rules},
			},
		}
	}
	// Joining agents share one bootstrap identity (a ServiceAccount, or a bootstrap token per
	// join command), so their requests are one flow, in workload-low with every workload's
	// ServiceAccount unless placed: 2,000 clusters joining at once had 1,523 of them rejected
	// there for a full queue (make bench-fleet), each rejection a retry after a backoff. Their
	// own level queues a whole fleet's join (8 queues of 250 for the one flow).
	bootstrap := []flowcontrolv1.Subject{
		{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: BootstrapNamespace, Name: BootstrapServiceAccount}},
		{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: BootstrapNamespace, Name: LegacyBootstrapServiceAccount}},
		{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: BootstrapGroup}},
	}
	everything := flowcontrolv1.PolicyRulesWithSubjects{
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
			Verbs: []string{flowcontrolv1.VerbAll}, APIGroups: []string{flowcontrolv1.APIGroupAll},
			Resources: []string{flowcontrolv1.ResourceAll}, ClusterScope: true, Namespaces: []string{flowcontrolv1.NamespaceEvery}}},
		NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
			Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}}},
	}
	bootstrapRules, agentRules := everything, everything
	bootstrapRules.Subjects, agentRules.Subjects = bootstrap, agents
	return []client.Object{
		// Shares as node-high (40) and workload-low (100) of the built-in levels.
		level(HeartbeatsName, 40, 64, 6, 50),
		level(AgentsName, 100, 128, 6, 50),
		level(BootstrapName, 40, 8, 8, 250),
		schema(BootstrapName, 820, bootstrapRules),
		// Matched before the built-in global-default (9900) and service-accounts (9000).
		schema(HeartbeatsName, 800, flowcontrolv1.PolicyRulesWithSubjects{Subjects: agents,
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
				Verbs: []string{"get", "create", "update", "patch"}, APIGroups: []string{"coordination.k8s.io"},
				Resources: []string{"leases"}, Namespaces: []string{flowcontrolv1.NamespaceEvery}}}}),
		schema(AgentsName, 850, agentRules),
	}
}

// HubName names the FlowSchema of the hub's own requests.
const HubName = "flotilla-hub"

// HubFlowSchema puts the hub's requests, made as user, in the built-in workload-high priority
// level, where kube-controller-manager's are: as a ServiceAccount the hub otherwise falls into
// workload-low with every workload's ServiceAccount, which rejected 643 of its requests (queue
// full) while 5,000 clusters applied 50,000 works in make bench-fleet. Nil when user is exempt
// anyway (system:masters) or unknown.
func HubFlowSchema(user string, groups []string) *flowcontrolv1.FlowSchema {
	if user == "" || slices.Contains(groups, "system:masters") {
		return nil
	}
	subject := flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}
	if parts := strings.Split(user, ":"); len(parts) == 4 && parts[0] == "system" && parts[1] == "serviceaccount" {
		subject = flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindServiceAccount,
			ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: parts[2], Name: parts[3]}}
	}
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: HubName},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-high"},
			// After the agents' schemas, before the built-in service-accounts (9000).
			MatchingPrecedence:  900,
			DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{Subjects: []flowcontrolv1.Subject{subject},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{flowcontrolv1.VerbAll}, APIGroups: []string{flowcontrolv1.APIGroupAll},
					Resources: []string{flowcontrolv1.ResourceAll}, ClusterScope: true, Namespaces: []string{flowcontrolv1.NamespaceEvery}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
					Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}}}}},
		},
	}
}
