// Package changepoint finds the steps in a series of repeated measurements of
// one key (a time or a bandwidth per run, oldest first): where the level
// changed, by how much, and how sure that is.
//
// The method is E-divisive means: D. S. Matteson and N. A. James, "A
// Nonparametric Approach for Multiple Change Point Analysis of Multivariate
// Data", Journal of the American Statistical Association 109(505), 334-345
// (2014). A split of a stretch into a left part X (m points) and a right part
// Y (k points) scores
//
//	Q(τ) = mk/(m+k) · (2/(mk) Σ|Xi−Yj| − Σ_{i<i'}|Xi−Xi'|/C(m,2) − Σ_{j<j'}|Yj−Yj'|/C(k,2))
//
// (the energy distance with α = 1); the best split maximises Q, and it is
// significant when few random permutations of the stretch reach as high a
// maximum. Splitting is repeated on each part (bisection).
//
// The way it is applied to performance histories is Apache Otava's (formerly
// Hunter: M. Fleming et al., "Hunter: Using Change Point Detection to Hunt
// for Performance Regressions", ICPE 2023; after D. Daly et al., "The Use of
// Change Point Detection to Identify Software Performance Regressions in a
// Continuous Integration System", ICPE 2020): the second part of a split runs
// to the end of the stretch (only τ varies, not the paper's κ); a long series
// is searched in overlapping windows of 50 points, so that a long stable
// history does not drown a step among its newest points; the candidates
// found are then re-tested against their neighbours and the weakest removed
// until every one left is significant (default p-value 0.001, Otava's). This
// package tests significance by permutation throughout, as the original
// Hunter did (Otava's later versions use a Student t-test in that last step).
//
// Two departures from the paper, for runs on shared machines: each stretch
// is tested with its values clipped to its median ± 5 robust standard
// deviations, so that a run stalled 20x by the scheduler cannot outweigh a
// step of a few percent (the clip depends on the stretch as a set, so the
// permutation test stays exact); and a change point needs MinSize (3) runs
// on each side, so that one or two wild runs are not a step.
//
// Everything is deterministic: each permutation test draws from a generator
// seeded by the values it tests, so one series gives one answer.
//
// Around Detect: Regressions picks the change points a CI job fails on,
// EstimateNoise measures a series' run-to-run spread for judging a single
// candidate, and MachineFactors takes out of many keys' series what slowed
// all of them at once.
//
// The package is pure: numbers in, numbers out, no I/O. Which metric, and
// any normalisation (by the machine's copy bandwidth, ref_copy_gbps, or by
// MachineFactors), is the caller's: it holds the records.
package changepoint
