// Package slotqueue holds a leader's slots waiting to fire and plans when to claim them ahead.
//
// Heap orders slots by fire time, and slots due together by their job's place in the table, so
// that the firing loop arms one timer for the earliest and a herd fires in table order. Claims
// is the queue of slots not yet claimed: it counts them per second of fire time and measures
// the rate at which claims land, and Plan says, for a given now, which slots are to be claimed
// and when the plan next changes, so that a herd is claimed early enough for its claims to land
// before it fires.
//
// It is pure: it reads no clock (every time is passed in) and touches no store. Neither type is
// safe for concurrent use; the firing loop owns them.
package slotqueue
