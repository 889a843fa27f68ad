package redislock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"scheduler/internal/lease"
)

// acquireScript takes the lock if nobody holds it, with a token one above
// the larger of the counter and the floor. KEYS: lock, counter. ARGV:
// holder, node, TTL in ms, floor, channel. Redis runs a script atomically,
// so the counter moves only with a successful SET NX. It returns
// {outcome, token, pttl, removed lock, lock given an expiry, replaced
// counter}: outcome 1 taken, 0 held by another (pttl is how long), 2 no
// token left; the last three are the values found (an empty one named so, as
// empty says that nothing was changed), or empty.
//
// Others can write both keys. A lock no campaigner could have written is
// not waited for: one whose value is not "<token> <holder> <node>" with a
// token of an int64 (or not a string) is deleted; one without an expiry is given the TTL, which its
// holder, if it is a term at all, renews, and which otherwise ends it. A
// counter that is no token (not a decimal int64 >= 0) counts as zero, so
// the floor decides. Lua's numbers are doubles, exact only up to 2^53, so
// the counter is compared and incremented as a decimal string.
var acquireScript = redis.NewScript(`
local maxtok = '9223372036854775807'
local function valid(s)
  return type(s) == 'string' and (s == '0' or (string.find(s, '^[1-9]%d*$') ~= nil and
    (#s < #maxtok or (#s == #maxtok and s <= maxtok))))
end
local function above(a, b)
  if #a ~= #b then return #a > #b end
  return a > b
end
local function succ(s)
  local i = #s
  while i > 0 and string.sub(s, i, i) == '9' do i = i - 1 end
  if i == 0 then return '1' .. string.rep('0', #s) end
  return string.sub(s, 1, i - 1) .. string.char(string.byte(s, i) + 1) .. string.rep('0', #s - i)
end
local function shown(v)
  if type(v) ~= 'string' then return 'a value of another type' end
  if v == '' then return 'an empty string' end
  return string.sub(v, 1, 200)
end
local removed, expired, counternote = '', '', ''
local pttl = redis.call('PTTL', KEYS[1])
if pttl ~= -2 then
  local v = redis.pcall('GET', KEYS[1])
  if type(v) ~= 'string' or not string.find(v, '^[1-9]%d* [^ ]+ .') or not valid(string.match(v, '^%d+')) then
    redis.call('DEL', KEYS[1])
    removed = shown(v)
  elseif pttl == -1 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return {0, '', tonumber(ARGV[3]), '', shown(v), ''}
  else
    return {0, '', pttl, '', '', ''}
  end
end
local tok = redis.pcall('GET', KEYS[2])
if not tok then
  tok = '0'
elseif not valid(tok) then
  counternote = shown(tok)
  tok = '0'
end
if above(ARGV[4], tok) then tok = ARGV[4] end
if tok == maxtok then return {2, tok, 0, removed, '', counternote} end
tok = succ(tok)
local value = tok .. ' ' .. ARGV[1] .. ' ' .. ARGV[2]
if not redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[3]) then return {0, '', 0, removed, '', counternote} end
redis.call('SET', KEYS[2], tok)
redis.call('PUBLISH', ARGV[5], 'granted')
return {1, tok, 0, removed, '', counternote}
`)

// acquire tries to take the lock for holder above floor. ok is false when
// someone else holds it; wait is then how long their lock still runs. It
// logs, at warning level, what it removed or changed of keys no campaigner
// wrote.
func (c *Campaigner) acquire(ctx context.Context, holder string, floor int64) (token int64, ok bool, wait time.Duration, err error) {
	res, err := acquireScript.Run(ctx, c.cli,
		[]string{c.cfg.Key, counterKey(c.cfg.Key)},
		holder, c.cfg.Node, c.cfg.TTL.Milliseconds(), strconv.FormatInt(max(floor, 0), 10), eventsChannel(c.cfg.Key)).Slice()
	if err != nil {
		return 0, false, 0, fmt.Errorf("take lock %s: %w", c.cfg.Key, err)
	}
	r, err := scriptReply(res)
	if err != nil {
		return 0, false, 0, fmt.Errorf("take lock %s: %w", c.cfg.Key, err)
	}
	c.logRepairs(r, floor)
	switch r.outcome {
	case 1:
		token, err := strconv.ParseInt(r.token, 10, 64)
		if err != nil {
			return 0, false, 0, fmt.Errorf("take lock %s: token %q: %w", c.cfg.Key, r.token, err)
		}
		return token, true, 0, nil
	case 2:
		return 0, false, 0, fmt.Errorf("take lock %s: %w: the token counter %s and the store's highest fence (%d) leave no token "+
			"below %d; if the counter was set by hand, set it back to the fence with: redis-cli SET %s %d; if the fence "+
			"itself is that high, reset the store's fences (fence_admin_reset) first",
			c.cfg.Key, lease.ErrNeedsOperator, counterKey(c.cfg.Key), floor, int64(math.MaxInt64), counterKey(c.cfg.Key), max(floor, 0))
	}
	return 0, false, time.Duration(r.pttl) * time.Millisecond, nil
}

// reply is acquireScript's reply.
type reply struct {
	outcome                   int64
	token                     string
	pttl                      int64
	removed, expired, counter string
}

// logRepairs logs, at warning level, what the script did to keys it found
// written by someone else.
func (c *Campaigner) logRepairs(r reply, floor int64) {
	if r.removed != "" {
		c.lg.Warn("removed a lock no campaigner wrote: its value is not a campaigner's", zap.String("removed", r.removed))
	}
	if r.expired != "" {
		c.lg.Warn("gave a lock with no expiry the TTL: no campaigner writes one, and its holder, if any, renews it",
			zap.String("value", r.expired), zap.Duration("ttl", c.cfg.TTL))
	}
	if r.counter != "" {
		c.lg.Warn("replaced a token counter that holds not a token: the store's highest fence decides the next token",
			zap.String("counter", counterKey(c.cfg.Key)), zap.String("removed", r.counter), zap.Int64("floor", floor))
	}
}

// scriptReply reads acquireScript's reply.
func scriptReply(res []any) (reply, error) {
	var r reply
	if len(res) != 6 {
		return r, fmt.Errorf("script returned %v", res)
	}
	var ok [6]bool
	r.outcome, ok[0] = res[0].(int64)
	r.token, ok[1] = res[1].(string)
	r.pttl, ok[2] = res[2].(int64)
	r.removed, ok[3] = res[3].(string)
	r.expired, ok[4] = res[4].(string)
	r.counter, ok[5] = res[5].(string)
	if ok != [6]bool{true, true, true, true, true, true} {
		return r, errors.New("script returned a reply of another shape")
	}
	return r, nil
}
