// Package schedule is the slot math of the cron table: when each job's slots fall, in which
// clock, across daylight saving time, and the jitter that spreads a herd. It is pure: it reads
// no clock of its own and imports nothing of the scheduler's.
//
// # Slots
//
// A job's schedule and time zone give its slots, the instants it is due. Parse reads the
// spec with robfig/cron's field parser (5 fields, or 6 with leading seconds, descriptors, and
// "@every D"); the next slot is computed here rather than by robfig/cron's Next, because that
// follows neither of the DST rules below. Slot computation is a pure function of the spec, the
// zone's rules and the instant asked about, so every replica computes the same slots as long as it
// loads the same time zone data.
//
// # Which clock a schedule follows
//
// The rule is cronie's (crond marks an entry whose minute or hour field starts with `*` as a
// wildcard job), extended to the seconds field and to any element of a list:
//
//   - A schedule whose second, minute and hour fields hold only values, ranges, lists and steps over
//     ranges follows the wall clock: "30 2 * * *", "0 1-5 * * *", "0 0-23/2 * * *", "0,30 9 * * *",
//     and @daily, @weekly, @monthly, @yearly.
//   - A schedule with `*` or `?` (with or without a step) in any of those fields follows real time:
//     "*/15 * * * *", "0 * * * *", "0 */2 * * *", "*/10 2 * * *", and @hourly. @every always
//     follows real time.
//
// # Daylight saving time
//
// A real-time schedule fires at every instant whose wall-clock reading matches. Readings skipped by
// a jump forward do not fire; readings repeated by a jump back fire at each occurrence. In
// America/New_York, "0 * * * *" fires at 01:00 EST then 03:00 EDT on 10 March 2024, and at 01:00
// EDT, 01:00 EST and 02:00 EST on 3 November 2024.
//
// A wall-clock schedule fires once per reading it names:
//
//   - A reading skipped by a jump forward fires at the first instant after the jump, and the slot is
//     marked Adjusted, its Nominal time the reading named: "30 2 * * *" fires at 03:00 EDT on
//     10 March 2024; in Australia/Lord_Howe, whose clocks go from 02:00 to 02:30, "15 2 * * *" fires
//     at 02:30 +11:00 on 6 October 2024; in America/Santiago, whose midnight is skipped, @daily fires
//     at 01:00 on 8 September 2024.
//   - A reading that occurs twice fires at its first occurrence only: "30 1 * * *" fires at 01:30
//     EDT on 3 November 2024 and not at 01:30 EST; in Lord_Howe "45 1 * * *" fires at 01:45 +11:00
//     on 6 April 2025 and not at 01:45 +10:30.
//   - Readings that fall on the same instant make one slot, whose Nominal time is the earliest of
//     them. A slot is identified by its instant, so "0,30 2 * * *" fires once at 03:00 EDT on
//     10 March 2024 (cronie would run it twice in a row), and "0 1-3 * * *" fires at 03:00 EDT for
//     02:00 and not again for 03:00.
//
// Hence a daily wall-clock schedule has exactly one slot on every local day. Jumps of any size are
// treated alike (cronie ignores jumps over three hours): when Pacific/Apia skipped 30 December
// 2011, "0 12 * * *" fired for it at 00:00 on the 31st.
//
// # @every
//
// "@every D" fires at the multiples of D since 1970-01-01T00:00:00Z, in real time and whatever the
// zone: "@every 90m" fires at 00:00, 01:30, 03:00 UTC and so on, "@every 10s" at every Unix second
// divisible by 10. D is a whole number of seconds, at least 1s. A D that does not divide a day
// drifts against the wall clock ("@every 7m" is not at :00 every hour).
//
// # Jitter
//
// Jitter gives each (job, slot) a delay in [0, jitter) so jobs sharing a slot spread out, the same on
// every replica. A slot keeps its identity (its instant, At): the delay moves only when it starts.
//
// # Limits
//
// Next searches ten years ahead (the 29th of February recurs within eight) and Parse
// rejects specs that never fire. Between, for catch-up, returns at most MaxBetween slots;
// Last finds the newest slot of a window of any length.
package schedule
