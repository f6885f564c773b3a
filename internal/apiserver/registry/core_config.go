package registry

import (
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ConfigMaps, Secrets and ServiceAccounts: named bags of data. Keys must be
// usable as file names, the whole bag fits in 1 MiB, and an immutable bag
// keeps its data for life.

func validateConfigMap(obj runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	allErrs := validateCoreMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	total := 0
	for _, key := range sortedKeys(cm.Data) {
		p := field.NewPath("data").Key(key)
		allErrs = append(allErrs, configKeyErrors(key, p)...)
		if _, dup := cm.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		allErrs = append(allErrs, configKeyErrors(key, field.NewPath("binaryData").Key(key))...)
		total += len(cm.BinaryData[key])
	}
	if total > corev1.MaxSecretSize {
		// The empty path means the error is about the whole object.
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return allErrs
}

func configKeyErrors(key string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(fldPath, key, msg))
	}
	return allErrs
}

func validateConfigMapUpdate(obj, old runtime.Object) field.ErrorList {
	cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	allErrs := validateCoreMetaUpdate(&cm.ObjectMeta, &oldCM.ObjectMeta)
	if oldCM.Immutable != nil && *oldCM.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableObjectMsg))
		}
		if !reflect.DeepEqual(cm.Data, oldCM.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableObjectMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, oldCM.BinaryData) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("binaryData"), immutableObjectMsg))
		}
	}
	return append(allErrs, validateConfigMap(obj)...)
}

var configMapTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"], 0),
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		cm := obj.(*corev1.ConfigMap)
		return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), Age(cm.CreationTimestamp)}
	},
}

// defaultSecret also folds stringData into data. Upstream does that while
// converting to its internal version; we store the versioned object, so
// without this the plain-text values would be stored and served back.
func defaultSecret(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
}

func validateSecret(obj runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	allErrs := validateCoreMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	dataPath := field.NewPath("data")
	total := 0
	for _, key := range sortedKeys(s.Data) {
		allErrs = append(allErrs, configKeyErrors(key, dataPath.Key(key))...)
		total += len(s.Data[key])
	}
	if total > corev1.MaxSecretSize {
		allErrs = append(allErrs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	requireKey := func(key string) {
		if _, ok := s.Data[key]; !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(key), ""))
		}
	}
	requireJSON := func(key string) {
		b, ok := s.Data[key]
		if !ok {
			allErrs = append(allErrs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(b, &map[string]interface{}{}); err != nil {
			allErrs = append(allErrs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			requireKey(corev1.BasicAuthUsernameKey)
			requireKey(corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			allErrs = append(allErrs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	}
	return allErrs
}

func validateSecretUpdate(obj, old runtime.Object) field.ErrorList {
	s, oldS := obj.(*corev1.Secret), old.(*corev1.Secret)
	allErrs := validateCoreMetaUpdate(&s.ObjectMeta, &oldS.ObjectMeta)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(s.Type, oldS.Type, field.NewPath("type"))...)
	if oldS.Immutable != nil && *oldS.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), immutableObjectMsg))
		}
		if !reflect.DeepEqual(s.Data, oldS.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), immutableObjectMsg))
		}
	}
	return append(allErrs, validateSecret(obj)...)
}

func secretFields(obj runtime.Object) fields.Set {
	return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
}

var secretTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Type", "string", corev1.Secret{}.SwaggerDoc()["type"], 0),
		column("Data", "string", corev1.Secret{}.SwaggerDoc()["data"], 0),
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		s := obj.(*corev1.Secret)
		return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), Age(s.CreationTimestamp)}
	},
}

func validateServiceAccount(obj runtime.Object) field.ErrorList {
	sa := obj.(*corev1.ServiceAccount)
	return validateCoreMeta(&sa.ObjectMeta, true, apivalidation.ValidateServiceAccountName)
}

func validateServiceAccountUpdate(obj, old runtime.Object) field.ErrorList {
	sa, oldSA := obj.(*corev1.ServiceAccount), old.(*corev1.ServiceAccount)
	return append(validateCoreMetaUpdate(&sa.ObjectMeta, &oldSA.ObjectMeta), validateServiceAccount(obj)...)
}

var serviceAccountTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"], 0),
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		sa := obj.(*corev1.ServiceAccount)
		return []interface{}{sa.Name, int64(len(sa.Secrets)), Age(sa.CreationTimestamp)}
	},
}
