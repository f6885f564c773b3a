// Package storage keeps API objects in etcd.
//
// It knows nothing of Kubernetes semantics: it stores opaque values under
// keys, and its one promise is that no write is lost. Every update and
// delete is an etcd transaction that compares the key's modification
// revision with the one the caller read, so two writers racing on one
// object cannot both win; the loser gets ErrConflict and the current value.
// The revision etcd assigns to a write is the object's resourceVersion.
//
// Keys follow upstream's layout, with the group spelled out:
//
//	/registry/<resource>/<namespace>/<name>          core group
//	/registry/<group>/<resource>/<namespace>/<name>  other groups
//
// (cluster-scoped objects omit the namespace). Values are encoded by Codec:
// Kubernetes protobuf behind the "k8s\x00" prefix for built-in types, JSON
// for types without a protobuf form.
//
// Usage:
//
//	etcd, err := storage.StartEmbedded(ctx, storage.EmbeddedConfig{Dir: dir})
//	store := storage.NewStore(etcd.Client)
//	rev, err := store.Create(ctx, key, value)
//	_, cur, err := store.Update(ctx, key, newValue, rev) // ErrConflict if someone wrote first
//	go store.Compact(ctx, 5*time.Minute)
//
// Watch streams changes after a revision; it is meant for one consumer per
// resource (the API server's watch cache), not one per client.
package storage
