package work

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1 "github.com/flotilla-dev/flotilla/core/apis/work/v1"
	"github.com/flotilla-dev/flotilla/hub/admin"
	"github.com/flotilla-dev/flotilla/klusterlet"
)

// hubProxy forwards TCP connections to the hub API server until cut, so a test can make the
// hub unreachable for an agent while it stays up for everyone else.
type hubProxy struct {
	target string
	ln     net.Listener
	mu     sync.Mutex
	up     bool
	conns  map[net.Conn]bool
}

func startHubProxy(target string) *hubProxy {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &hubProxy{target: target, ln: ln, up: true, conns: map[net.Conn]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	DeferCleanup(func() { _ = ln.Close(); p.cut() })
	return p
}

func (p *hubProxy) serve(c net.Conn) {
	p.mu.Lock()
	if !p.up {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { _, _ = io.Copy(u, c); _ = u.Close() }()
	_, _ = io.Copy(c, u)
	_ = c.Close()
}

// cut drops every connection and refuses new ones until restore.
func (p *hubProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.up = false
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *hubProxy) restore() {
	p.mu.Lock()
	p.up = true
	p.mu.Unlock()
}

func (p *hubProxy) url() string { return "https://" + p.ln.Addr().String() }

var _ = Describe("Work agent resilience", Ordered, func() {
	It("keeps what it applied while the hub is unreachable for 30 s, and catches up after", func() {
		const name = "cutoff"
		hubAddr := fleet.Hub.URL[len("https://"):]
		proxy := startHubProxy(hubAddr)
		kc, err := clientcmd.Load(bootstrapKC)
		Expect(err).NotTo(HaveOccurred())
		for _, c := range kc.Clusters {
			c.Server = proxy.url()
		}
		boot, err := clientcmd.Write(*kc)
		Expect(err).NotTo(HaveOccurred())
		ns := "agent-" + name
		Expect(managed[cluster1].client.Create(suiteCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		a := startAgentBoot(name, fleet.Managed[0], ns, klusterlet.WorkOptions{StatusSyncInterval: statusSync, EvictionGracePeriod: time.Hour}, boot)
		DeferCleanup(func() { a.stop() })
		Eventually(func(g Gomega) {
			_, err := admin.Accept(suiteCtx, hubClient, kubernetes.NewForConfigOrDie(fleet.Hub.Config), []string{name})
			g.Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed())
		Expect(client.IgnoreAlreadyExists(managed[cluster1].client.Create(suiteCtx, namespace("cutoff")))).To(Succeed())
		w := createWork(newWork(name, "cutoff-work", configMap("cutoff", "before", map[string]string{"k": "1"})))
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))

		proxy.cut()
		cutAt := time.Now()
		// While the hub is unreachable: the work changes on the hub, and nothing the agent
		// applied is removed from the cluster.
		cur := getWork(Default, w)
		cur.Spec.Workload.Manifests = manifests(configMap("cutoff", "before", map[string]string{"k": "2"}), configMap("cutoff", "during", nil))
		Expect(hubClient.Update(suiteCtx, cur)).To(Succeed())
		before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cutoff", Name: "before"}}
		for time.Since(cutAt) < 30*time.Second {
			Expect(live(cluster1, before)(Default)).NotTo(BeNil(), "an applied resource went away while the hub was unreachable")
			Expect(live(cluster1, before)(Default).Data).To(HaveKeyWithValue("k", "1"), "the agent cannot have seen the new generation")
			time.Sleep(time.Second)
		}
		proxy.restore()
		Eventually(func(g Gomega) map[string]string { return live(cluster1, before)(g).Data }, 2*time.Minute).Should(HaveKeyWithValue("k", "2"))
		Eventually(workCondition(w, workv1.WorkApplied), 2*time.Minute).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		Expect(live(cluster1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "cutoff", Name: "during"}})(Default)).NotTo(BeNil())
	})

	It("loses and duplicates nothing when the agent is killed in the middle of applying a work", func() {
		const name = "restarted"
		a := joinExtra(name)
		const n = 60
		Expect(client.IgnoreAlreadyExists(managed[cluster2].client.Create(suiteCtx, namespace("restart")))).To(Succeed())
		var objs []any
		for i := range n {
			objs = append(objs, configMap("restart", fmt.Sprintf("cm-%02d", i), map[string]string{"i": fmt.Sprint(i)}))
		}
		w := createWork(newWork(name, "restart-work", objs...))
		// Kill the agent once it has applied some of the manifests.
		ours := func(g Gomega) []corev1.ConfigMap {
			list := &corev1.ConfigMapList{}
			g.Expect(managed[cluster2].client.List(suiteCtx, list, client.InNamespace("restart"))).To(Succeed())
			var out []corev1.ConfigMap
			for _, cm := range list.Items {
				if cm.Name != "kube-root-ca.crt" {
					out = append(out, cm)
				}
			}
			return out
		}
		Eventually(ours, time.Minute, 5*time.Millisecond).ShouldNot(BeEmpty())
		a.stop()
		GinkgoWriter.Printf("agent stopped with %d of %d ConfigMaps applied\n", len(ours(Default)), n)

		a = startAgentIn(name, fleet.Managed[1], "agent-"+name)
		DeferCleanup(func() { a.stop() })
		Eventually(workCondition(w, workv1.WorkApplied)).Should(cond(metav1.ConditionTrue, "AppliedManifestWorkComplete"))
		amw := &workv1.AppliedManifestWork{}
		Eventually(func(g Gomega) []workv1.AppliedManifestResourceMeta {
			g.Expect(managed[cluster2].client.Get(suiteCtx, client.ObjectKey{Name: appliedName(w)}, amw)).To(Succeed())
			return amw.Status.AppliedResources
		}).Should(HaveLen(n))
		uids := map[string]bool{}
		for _, r := range amw.Status.AppliedResources {
			Expect(uids[r.UID]).To(BeFalse(), "resource %s listed twice", r.Name)
			uids[r.UID] = true
		}
		applied := ours(Default)
		Expect(applied).To(HaveLen(n))
		for _, cm := range applied {
			Expect(uids[string(cm.UID)]).To(BeTrue(), "ConfigMap %s is not recorded with its UID", cm.Name)
			Expect(cm.OwnerReferences).To(ConsistOf(HaveField("UID", amw.UID)), "ConfigMap %s", cm.Name)
		}
		// Nothing is left behind when the work goes.
		Expect(hubClient.Delete(suiteCtx, w)).To(Succeed())
		Eventually(ours).Should(BeEmpty())
		Eventually(func() bool {
			return apierrors.IsNotFound(managed[cluster2].client.Get(suiteCtx, client.ObjectKey{Name: appliedName(w)}, amw))
		}).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(hubClient.Get(suiteCtx, client.ObjectKeyFromObject(w), &workv1.ManifestWork{}))
		}).Should(BeTrue())
	})
})
