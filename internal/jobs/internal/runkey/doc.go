// Package runkey holds the compact forms of a run that the runner keeps per job or per run in
// flight: what a claim ahead answered for a slot, kept until the slot fires, and what a started
// run's start line needs, kept until the step that started it ends; sets of slots (Slots),
// such as those whose claim failed on the store and may have committed all the same; and the
// mapping of a batch takeover's answer onto its runs (Reclaimed).
//
// A table of many jobs holds one Claim per job for as long as it is led, and a herd holds one
// Started per run it starts, so each keeps the fields that the slot does not hold already and
// no more (a claim reads back only the run's key, see scheduler.Result).
package runkey
