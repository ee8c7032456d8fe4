package scenarios

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-dev/lockstep/sim/harness"
)

// masterServiceIP is the kubernetes service's cluster IP in the services
// scenario.
const masterServiceIP = "10.96.0.1"

// serviceNames are the services the service ops create, change and delete
// (namespace default, beside kubernetes).
var serviceNames = []string{"web", "db"}

func servicesScenario() Scenario {
	return Scenario{Name: "services",
		Doc: "services of the pods' namespace are created, changed and deleted while pods start and crash, through agent crashes, API outages, dropped watches and compactions: every container of an API pod carries the kubernetes service's variables (service-env)",
		Mix: map[string]int{"create": 4, "delete": 2, "service-put": 3, "service-delete": 2, "crash": 1, "crash-in-sync": 1,
			"crash-during-outage": 1, "api-outage": 1, "api-drop-watches": 1, "api-compact": 1, "wait": 2},
		Setup: putMasterService,
	}
}

// putMasterService creates the kubernetes service of namespace default.
func putMasterService(h *harness.Harness) {
	h.API.User().PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIP: masterServiceIP, Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}})
}

// opServicePut creates or changes service a to cluster IP 10.96.7.b.
func opServicePut(r *run, a [3]int) error {
	name := serviceNames[pick(a[0], len(serviceNames))]
	r.h.API.User().PutService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.96.7.%d", min(max(a[1], 1), 250)),
			Ports: []corev1.ServicePort{{Port: 8080, Protocol: corev1.ProtocolTCP}}}})
	return nil
}

// opServiceDelete deletes service a (nothing when it does not exist).
func opServiceDelete(r *run, a [3]int) error {
	r.h.API.User().DeleteService(metav1.NamespaceDefault, serviceNames[pick(a[0], len(serviceNames))])
	return nil
}
