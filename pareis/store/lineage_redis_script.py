"""The Redis lineage store's scripts (layout 3, :mod:`pareis.store.lineage_redis`).

An update's moves are planned on the client (:func:`~pareis.store.lineage_redis_encoding.plan`); the scripts check
stamps, mark progress and merge counts and bucket entries. Each script names every key it touches in ``KEYS``, all
keys of one home node (one hash tag: one Redis Cluster slot). Moves arrive as ARGV groups
(:meth:`~pareis.store.lineage_redis_encoding.HomeWrites.ops`): ``c`` counts (``HINCRBY``, or ``HMGET`` then
``HSET``/``HDEL`` when a key takes several), ``b`` bucket entries (a value merged with its deltas: appended when
every delta adds a new entry, the common first write; rebuilt otherwise), ``s``/``d`` attributes set/deleted.

* :data:`CLAIM` (``KEYS``: the record, the pending hash, the home's data keys): the stamp and body compared with
  the record (``0`` stale, ``2`` unchanged, ``5`` repeated: the record's own stamp too). A first write planned
  whole in the entity's own home (flag ``f``) is applied and recorded at once (``1``). Otherwise the update becomes
  the record's *pending* apply, numbered one past the record's sequence, and the script returns ``{3, seq,
  record}``; an apply already pending (a writer that crashed, or runs alongside) comes back as ``{4, seq, record,
  its record, its attributes}`` for the caller to finish first (the same update pending again is ``3``: a redo).
* :data:`DELTA` (``KEYS``: the home's marker hash, its data keys): another home's share of a pending apply, once:
  skipped when the marker hash says this record's sequence got there already.
* :data:`FINALIZE` (``KEYS``: the record, the pending hash, the entity's data keys): the entity's own share, and the
  pending apply becomes the record; a no-op once done.
"""

from __future__ import annotations

_OPS = """
local sub, find = string.sub, string.find
local CHUNK = 500
local function counts(key, i, k)
  if k == 1 then
    if redis.call('HINCRBY', key, ARGV[i], ARGV[i + 1]) <= 0 then redis.call('HDEL', key, ARGV[i]) end
    return
  end
  for from = 0, k - 1, CHUNK do
    local upto = math.min(from + CHUNK, k) - 1
    local fields = {}
    for j = from, upto do fields[#fields + 1] = ARGV[i + 2 * j] end
    local old = redis.call('HMGET', key, unpack(fields))
    local set, del = {}, {}
    for j = from, upto do
      local c = (tonumber(old[j - from + 1]) or 0) + tonumber(ARGV[i + 2 * j + 1])
      if c > 0 then set[#set + 1] = ARGV[i + 2 * j]; set[#set + 1] = c else del[#del + 1] = ARGV[i + 2 * j] end
    end
    if #set > 0 then redis.call('HSET', key, unpack(set)) end
    if #del > 0 then redis.call('HDEL', key, unpack(del)) end
  end
end
-- A bucket value with entries d (entry -> delta) added, when every delta is +1 for an entry it does not hold (the
-- common case, a first write): nil otherwise, for the general merge.
local function plus(v, d)
  local framed = v and ('\\030' .. v)
  local out = v or ''
  for e, delta in pairs(d) do
    if delta ~= 1 then return nil end
    if framed and (find(framed, '\\030' .. e .. '\\030', 1, true) or find(framed, '\\030' .. e .. '\\031', 1, true))
    then
      return nil
    end
    out = out .. e .. '\\030'
  end
  return out
end
local function merged(v, d)
  local order, have = {}, {}
  if v then
    for e in string.gmatch(v, '([^\\030]*)\\030') do
      local at = find(e, '\\031', 1, true)
      local c = 1
      if at then c = tonumber(sub(e, at + 1)); e = sub(e, 1, at - 1) end
      order[#order + 1] = e; have[e] = c
    end
  end
  for e, delta in pairs(d) do
    local c = have[e]
    if c == nil then order[#order + 1] = e; c = 0 end
    have[e] = c + delta
  end
  local parts = {}
  for _, e in ipairs(order) do
    local c = have[e]
    if c > 0 then parts[#parts + 1] = (c == 1) and (e .. '\\030') or (e .. '\\031' .. c .. '\\030') end
  end
  if #parts > 0 then return table.concat(parts) end
  return nil
end
local function buckets(key, i, k)
  local m, fields = {}, {}
  for j = 0, k - 1 do
    local f, e, delta = ARGV[i + 3 * j], ARGV[i + 3 * j + 1], tonumber(ARGV[i + 3 * j + 2])
    local d = m[f]
    if d == nil then d = {}; m[f] = d; fields[#fields + 1] = f end
    d[e] = (d[e] or 0) + delta
  end
  for from = 1, #fields, CHUNK do
    local part = {unpack(fields, from, math.min(from + CHUNK - 1, #fields))}
    local old = redis.call('HMGET', key, unpack(part))
    local set, del = {}, {}
    for j, f in ipairs(part) do
      local v = old[j] or nil
      local value = plus(v, m[f]) or merged(v, m[f])
      if value then set[#set + 1] = f; set[#set + 1] = value else del[#del + 1] = f end
    end
    if #set > 0 then redis.call('HSET', key, unpack(set)) end
    if #del > 0 then redis.call('HDEL', key, unpack(del)) end
  end
end
local function apply_ops(i)
  local n = #ARGV
  while i <= n do
    local kind, key, k = ARGV[i], KEYS[tonumber(ARGV[i + 1])], tonumber(ARGV[i + 2])
    i = i + 3
    if kind == 'c' then
      counts(key, i, k); i = i + 2 * k
    elseif kind == 'b' then
      buckets(key, i, k); i = i + 3 * k
    elseif kind == 's' then
      redis.call('HSET', key, unpack(ARGV, i, i + 2 * k - 1)); i = i + 2 * k
    else
      redis.call('HDEL', key, unpack(ARGV, i, i + k - 1)); i = i + k
    end
  end
end
"""

CLAIM = (
    _OPS
    + """
local nv, nt, nd, nb = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local tail = nv .. '\\n' .. ARGV[2] .. '\\n' .. nd .. '\\n' .. nb
local cur = redis.call('GET', KEYS[1])
local pend = redis.call('HGET', KEYS[2], 'r')
if pend then
  local ps, ptail = string.match(pend, '^([^\\n]*)\\n(.*)$')
  if ptail == tail then return {3, tonumber(ps), cur} end
  return {4, tonumber(ps), cur, pend, redis.call('HGET', KEYS[2], 'a') or ''}
end
local seq, empty = 1, true
if cur then
  local os, ov, ot, od, ob = string.match(cur, '^([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)\\n(.*)$')
  ot = tonumber(ot)
  local older
  if od ~= '1' and ov ~= '' and nv ~= '' and tonumber(ov) ~= tonumber(nv) then
    older = tonumber(nv) < tonumber(ov)
  else
    older = nt < ot
  end
  if older then return 0 end
  if od == nd and ob == nb then
    if ov == nv and ot == nt then return 5 end
    return 2
  end
  seq, empty = tonumber(os) + 1, od == '1'
end
if ARGV[6] == 'f' and empty then
  apply_ops(7)
  redis.call('SET', KEYS[1], seq .. '\\n' .. tail)
  return 1
end
redis.call('HSET', KEYS[2], 'r', seq .. '\\n' .. tail, 'a', ARGV[5])
return {3, seq, cur}
"""
)

DELTA = (
    _OPS
    + """
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
if done >= tonumber(ARGV[2]) then return 0 end
apply_ops(3)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""
)

FINALIZE = (
    _OPS
    + """
local pend = redis.call('HGET', KEYS[2], 'r')
if not pend or string.match(pend, '^([^\\n]*)\\n') ~= ARGV[1] then return 0 end
apply_ops(2)
redis.call('SET', KEYS[1], pend)
redis.call('DEL', KEYS[2])
return 1
"""
)

READ = """
local out = {}
for i = 1, #KEYS do
  out[i] = redis.call(ARGV[1], KEYS[i], unpack(ARGV, 2))
end
return out
"""
"""``ARGV[1]`` (``HKEYS``, ``HGETALL``, or ``HGET`` of the field ``ARGV[2]``) of each key: an empty list for a
missing key (a nil for ``HGET``). Writes nothing."""

FIELDS = """
local unpack, min = unpack, math.min
local out, a = {}, 1
for i = 1, #KEYS do
  local n = tonumber(ARGV[a])
  local got = redis.call('HMGET', KEYS[i], unpack(ARGV, a + 1, a + min(n, 1000)))
  for from = a + 1001, a + n, 1000 do
    local part = redis.call('HMGET', KEYS[i], unpack(ARGV, from, min(from + 999, a + n)))
    for j = 1, #part do got[#got + 1] = part[j] end
  end
  out[i] = got
  a = a + n + 1
end
return out
"""
"""``HMGET`` of each key's fields: ``ARGV`` holds, per key in order, the number of its fields and then the fields
(a thousand per ``HMGET`` at most: Lua's ``unpack`` is bounded). Each key's reply lists its fields' values in order,
a nil for a missing one. Writes nothing."""

OUTLINE = """
local find, concat = string.find, table.concat
local out = {}
for i = 1, #KEYS do
  local f = redis.call('HKEYS', KEYS[i])
  if #f > 0 then
    local j = '\\n' .. concat(f, '\\n') .. '\\n'
    if not (find(j, '\\n[^\\001]') or find(j, '\\001\\n', 1, true) or find(j, '[%.%%%[]')) then
      f = #f
    end
  end
  out[i] = f
end
return out
"""
"""For each schema hash (``o:has_column`` of a dataset), its size when it is certainly flat
(:func:`~pareis.core.fieldpath.is_flat`) — every field a child of the key (``\\x01<path>``) with a non-empty path
holding none of ``.``, ``%`` and ``[`` (a dot, an encoded character, perhaps a v2 path), checked on the fields
joined, in C — else its fields, for the client to decide (so also when a bracket or a field's own newline makes the
check unsure). Writes nothing."""
