package sglang

import "testing"

func TestParsePhaseRoundTrip(t *testing.T) {
	for _, p := range Phases() {
		if got, ok := ParsePhase(p.String()); !ok || got != p {
			t.Errorf("ParsePhase(%q) = %v, %v", p, got, ok)
		}
	}
	if _, ok := ParsePhase("load"); ok {
		t.Error(`ParsePhase("load") found a phase; the name is "loading"`)
	}
}

func TestStageOf(t *testing.T) {
	cases := []struct {
		kind    Kind
		phase   Phase
		in      bool
		opens   bool
		failure Failure
	}{
		{KindServerArgs, PhaseStarting, true, true, NotFailure},
		{KindLoadBegin, PhaseLoading, true, true, NotFailure},
		{KindLoadEnd, PhaseLoading, true, false, NotFailure},
		{KindLimits, PhaseCUDAGraph, true, false, NotFailure},
		{KindUvicornRunning, PhaseWarmup, true, true, NotFailure},
		{KindReady, PhaseReady, true, true, NotFailure},
		{KindAccess, 0, false, false, NotFailure},
		{KindException, 0, false, false, Survivable},
		{KindHealthFailed, 0, false, false, Survivable},
		{KindCUDAOOM, 0, false, false, Fatal},
		{KindExitCode, 0, false, false, Fatal},
	}
	for _, tc := range cases {
		st := StageOf(tc.kind)
		if st.Phase != tc.phase || st.InPhase != tc.in || st.Opens != tc.opens || st.Failure != tc.failure {
			t.Errorf("StageOf(%s) = %+v", tc.kind, st)
		}
	}
	if StageOf(numKinds) != (Stage{}) {
		t.Error("an out-of-range kind has a stage")
	}
}

func TestFailureOfSoftWatchdog(t *testing.T) {
	hard := Watchdog(ProfileFor(EraC), 300e9)
	soft := hard
	soft.Fields = Fields{{"who", "Scheduler"}, {"timeout", "300"}, {"soft", "True"}}
	if FailureOf(hard) != Fatal || FailureOf(soft) != NotFailure {
		t.Errorf("hard %v, soft %v", FailureOf(hard), FailureOf(soft))
	}
}
