package job

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// unknownIndex is the completion index of a pod that has none (or an
// unreadable one): such a pod never counts for an Indexed job.
const unknownIndex = -1

// interval is an inclusive range of completion indexes.
type interval struct{ first, last int }

// intervals is a sorted list of disjoint, non-adjacent ranges: the form of
// status.completedIndexes and status.failedIndexes ("1,3-5,7"). Keeping
// ranges rather than sets keeps a job of 100,000 completions cheap.
type intervals []interval

// parseIntervals reads an index list as the API stores it. Indexes at or
// beyond completions are dropped (an elastic job may have shrunk), and an
// unreadable range is skipped rather than failing the sync: the list is
// rebuilt from the pods anyway.
func parseIntervals(s string, completions int) intervals {
	if s == "" {
		return nil
	}
	var out intervals
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				continue
			}
			last = min(last, completions-1)
		}
		out = append(out, interval{first, last})
	}
	// One merge at the end joins neighbours ("1,2" is one range) and
	// tolerates a list written out of order.
	return intervals(nil).merge(out)
}

// String renders the list as the API does: a pair of neighbours is
// written "3,4", a longer run "3-5".
func (iv intervals) String() string {
	var b strings.Builder
	for _, r := range iv {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r.first))
		switch {
		case r.last == r.first+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(r.last))
		case r.last > r.first:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(r.last))
		}
	}
	return b.String()
}

// total is the number of indexes in the list.
func (iv intervals) total() int {
	n := 0
	for _, r := range iv {
		n += r.last - r.first + 1
	}
	return n
}

// has reports whether ix is in the list (binary search).
func (iv intervals) has(ix int) bool {
	i, _ := slices.BinarySearchFunc(iv, ix, func(r interval, ix int) int {
		switch {
		case r.last < ix:
			return -1
		case r.first > ix:
			return 1
		}
		return 0
	})
	return i < len(iv) && iv[i].first <= ix && ix <= iv[i].last
}

// withIndexes returns the list with the given indexes added.
func (iv intervals) withIndexes(ixs []int) intervals {
	add := make(intervals, len(ixs))
	for i, ix := range ixs {
		add[i] = interval{ix, ix}
	}
	return iv.merge(add)
}

// merge returns the union of two lists, joining ranges that touch.
func (iv intervals) merge(other intervals) intervals {
	all := make(intervals, 0, len(iv)+len(other))
	all = append(append(all, iv...), other...)
	slices.SortFunc(all, func(a, b interval) int { return a.first - b.first })
	var out intervals
	for _, r := range all {
		if n := len(out); n > 0 && r.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, r.last)
			continue
		}
		out = append(out, r)
	}
	return out
}

// completionIndex reads a pod's batch.kubernetes.io/job-completion-index
// annotation; unknownIndex when absent or not a non-negative integer.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return unknownIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return unknownIndex
	}
	return ix
}

// validIndex: the pod has an index inside [0, completions).
func validIndex(p *corev1.Pod, completions int) bool {
	ix := completionIndex(p)
	return ix != unknownIndex && ix < completions
}

// indexesOf returns the distinct known indexes of pods, sorted.
func indexesOf(pods []*corev1.Pod) []int {
	var out []int
	for _, p := range pods {
		if ix := completionIndex(p); ix != unknownIndex {
			out = append(out, ix)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// firstPendingIndexes returns up to count indexes below completions that
// no pod covers: not succeeded, not failed for good, not running, and
// (when only failed pods are replaced) not held by a terminating pod.
// Lowest first, so an Indexed job works through its indexes in order.
func firstPendingIndexes(st *syncState, count, completions int) []int {
	if count <= 0 {
		return nil
	}
	taken := st.succeededIdx.withIndexes(indexesOf(st.active))
	if onlyReplaceFailedPods(st.job) {
		taken = taken.withIndexes(indexesOf(terminatingPods(st.pods)))
	}
	if st.failedIdx != nil {
		taken = taken.merge(*st.failedIdx)
	}
	out := make([]int, 0, count)
	next := 0
	for _, r := range taken {
		for ; next < r.first && next < completions && len(out) < count; next++ {
			out = append(out, next)
		}
		next = max(next, r.last+1)
	}
	for ; next < completions && len(out) < count; next++ {
		out = append(out, next)
	}
	return out
}

// duplicateIndexPods splits an Indexed job's active pods into those to
// remove — pods with no index, an index out of range, or an index another
// pod already holds (all but the most valuable of each index) — and the
// rest.
func duplicateIndexPods(pods []*corev1.Pod, completions int) (rm, keep []*corev1.Pod) {
	byIndex := map[int][]*corev1.Pod{}
	for _, p := range pods {
		ix := completionIndex(p)
		if ix == unknownIndex || ix >= completions {
			rm = append(rm, p)
			continue
		}
		byIndex[ix] = append(byIndex[ix], p)
	}
	ixs := make([]int, 0, len(byIndex))
	for ix := range byIndex {
		ixs = append(ixs, ix)
	}
	slices.Sort(ixs)
	for _, ix := range ixs {
		same := byIndex[ix]
		// The least valuable go first; the last one stays.
		slices.SortStableFunc(same, removalOrder)
		rm = append(rm, same[:len(same)-1]...)
		keep = append(keep, same[len(same)-1])
	}
	return rm, keep
}
