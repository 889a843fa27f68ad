// Package holds finds, at a takeover, the jobs whose fences the new leader cannot raise because
// a transaction that entered them with an older token is still open (a job's database role after
// fence_verify, a frozen earlier leader's write), so that the leader holds back those jobs alone
// and takes over the others.
//
// Once a raise of many fences has given up waiting, Around asks the store which fences other
// sessions hold (its lock table) and holds those jobs back at once, raising the others without
// them: the takeover then costs the others one raise timeout. The store's answer is a snapshot,
// and it cannot see every hold (a row lock on the fence table held without the fence's lock), so
// nothing rests on it: every job not held back is raised, and when the store names no job, or
// the raise of the others gives up again, the jobs are raised in parts, each part that gives up
// split again, until the held ones are found by their own raises. Every call Around starts has
// returned before it returns, and it calls back (Hold, Settle) on the calling goroutine only.
package holds
