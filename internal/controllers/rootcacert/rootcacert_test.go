package rootcacert_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/rootcacert"
)

func TestPublisher(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	cs := c.Client
	ca := string(c.Server.PKI.CAPEM)
	if ca == "" {
		t.Fatal("cluster has no CA")
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Namespaces().Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Run(t, c.Config, rootcacert.NewDescriptor(c.Server.PKI.CAPEM))

	// wait returns the published ConfigMap in ns once it is correct and
	// (when notUID is set) a new object.
	wait := func(t *testing.T, ns string, notUID types.UID) *corev1.ConfigMap {
		t.Helper()
		var cm *corev1.ConfigMap
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, rootcacert.ConfigMapName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if got.UID == notUID {
				return false, "still the old object"
			}
			if !maps.Equal(got.Data, map[string]string{rootcacert.DataKey: ca}) {
				return false, fmt.Sprintf("data %v", got.Data)
			}
			if got.Annotations[rootcacert.DescriptionAnnotation] != rootcacert.Description {
				return false, fmt.Sprintf("annotations %v", got.Annotations)
			}
			cm = got
			return true, ""
		})
		return cm
	}

	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("published in new and existing namespaces", func(t *testing.T) {
		wait(t, "apps", "")
		wait(t, metav1.NamespaceDefault, "")
		wait(t, metav1.NamespaceSystem, "")
	})
	t.Run("restored after an edit", func(t *testing.T) {
		cm := wait(t, "apps", "")
		cm.Data[rootcacert.DataKey] = "not a CA"
		cm.Data["extra"] = "x"
		cm.Labels = map[string]string{"keep": "me"}
		if _, err := cs.CoreV1().ConfigMaps("apps").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := wait(t, "apps", "")
		if got.UID != cm.UID {
			t.Error("restored by recreating, want an update")
		}
		if got.Labels["keep"] != "me" {
			t.Errorf("labels %v: a user's label was dropped", got.Labels)
		}
	})
	t.Run("recreated after delete", func(t *testing.T) {
		cm := wait(t, "apps", "")
		if err := cs.CoreV1().ConfigMaps("apps").Delete(ctx, rootcacert.ConfigMapName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		wait(t, "apps", cm.UID)
	})
	t.Run("not in a terminating namespace", func(t *testing.T) {
		if _, err := cs.CoreV1().ConfigMaps("gone").Get(ctx, rootcacert.ConfigMapName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("err = %v, want NotFound", err)
		}
	})
}
