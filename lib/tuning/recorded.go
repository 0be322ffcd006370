package tuning

import "strings"

// RecordedChoice names the algorithm and protocol a measured run forced,
// from what its result record says: coll (results' collective name), the
// forced algo and proto as recorded, and chosen, the algorithm the stack
// said it ran ("" when unknown). Names come back canonical ("ring" ->
// "Ring", "" or "auto" -> "auto"; a name it does not know as given).
//
// A run that forced the protocol only, of a collective with one algorithm
// (everything but allreduce runs Ring in both stacks' tables), forced Ring
// too, unless the stack says it ran another (the embedded stack's auto may
// run the one-shot with LL): so its records make rules and meet forced
// Ring runs. The tuner's keys and the plots' fields both read runs so.
func RecordedChoice(coll, algo, proto, chosen string) (string, string) {
	a := canonicalName(algo, AlgoNames())
	p := canonicalName(proto, []string{"LL", "LL128", "Simple"})
	if a == "auto" && p != "auto" && ringOnly(coll) && (chosen == "" || chosen == "Ring") {
		a = "Ring"
	}
	return a, p
}

// ringOnly says coll has a single algorithm, Ring, in both stacks' tables.
func ringOnly(coll string) bool {
	c, err := ParseColl(coll)
	return err == nil && !Supports(c, Tree)
}

func canonicalName(s string, names []string) string {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "auto") {
		return "auto"
	}
	for _, n := range names {
		if strings.EqualFold(t, n) {
			return n
		}
	}
	return t
}
