package auth

import "slices"

// DeepCopy returns a copy that shares no slices or maps with u, so that a
// caller may add groups to an authenticated user without changing what an
// authenticator keeps (the token file hands out the same *User every time).
func (u *User) DeepCopy() *User {
	if u == nil {
		return nil
	}
	out := &User{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	if u.Extra != nil {
		out.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			out.Extra[k] = slices.Clone(v)
		}
	}
	return out
}

// InGroup reports whether u is a member of group. A nil user is in no group.
func (u *User) InGroup(group string) bool {
	return u != nil && slices.Contains(u.Groups, group)
}

// withGroup returns groups with group appended unless already present. It
// appends to a new slice, never in place: the caller's slice may be shared.
func withGroup(groups []string, group string) []string {
	if slices.Contains(groups, group) {
		return groups
	}
	out := make([]string, 0, len(groups)+1)
	out = append(out, groups...)
	return append(out, group)
}
