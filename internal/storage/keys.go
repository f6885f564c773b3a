package storage

import "strings"

// Prefix returns the key prefix of a resource, and of one namespace of it
// when namespace is not empty. It ends in "/".
func Prefix(group, resource, namespace string) string {
	var b strings.Builder
	b.WriteString("/registry/")
	if group != "" {
		b.WriteString(group)
		b.WriteByte('/')
	}
	b.WriteString(resource)
	b.WriteByte('/')
	if namespace != "" {
		b.WriteString(namespace)
		b.WriteByte('/')
	}
	return b.String()
}

// Key returns the key of one object.
func Key(group, resource, namespace, name string) string {
	return Prefix(group, resource, namespace) + name
}
