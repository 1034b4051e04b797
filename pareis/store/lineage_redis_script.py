"""The Redis lineage store's apply script (layout 2, :mod:`pareis.store.lineage_redis`), one call per update.

Stamp comparison mirrors ``Stamp.older_than``; the diff mirrors ``MemoryLineageStore._apply``; fields mirror
``field_of``/``key_of``. The script works on the record's node table (:func:`~pareis.store.lineage_redis.encode_facts`:
a column is ``[index of its parent, path]``), so a node's key, field and bucket are computed once per node, not
once per edge, and no column URN is rebuilt unless a field needs it. Writes are grouped per key: a key touched by
one field takes one ``HINCRBY``; by more, one ``HMGET`` and one ``HSET`` (plus an ``HDEL`` for fields that fall to
zero), so a dataset pair's 22 column edges cost a handful of calls instead of ~50. A first write of an aspect (no
record, or a tombstone) skips the diff altogether.
"""

from __future__ import annotations

from pareis.core.fieldpath import COLUMN_PREFIX


def _lua_string(text: str) -> str:
    return "'" + "".join(f"\\{b:03d}" for b in text.encode()) + "'"


def apply_script(field_prefixes: tuple[tuple[str, str], ...]) -> str:
    """The Lua source, with the field prefixes (``FIELD_PREFIXES``) baked in."""
    prefixes = ", ".join(f"{{{_lua_string(m)}, {_lua_string(x)}}}" for m, x in field_prefixes)
    return (
        _HEAD
        + "local COL = "
        + _lua_string(COLUMN_PREFIX)
        + "\nlocal DSP = "
        + _lua_string(field_prefixes[0][1][len(COLUMN_PREFIX) :])
        + "\nlocal PREFIXES = {"
        + prefixes
        + "}\n"
        + _BODY
    )


_HEAD = """
local p, entity, aspect = ARGV[1], ARGV[2], ARGV[3]
local nv, nt, nd, nf = ARGV[4], tonumber(ARGV[5]), ARGV[6], ARGV[7]
local rk = p .. 'r:' .. aspect .. '|' .. entity
local raw = redis.call('GET', rk)
local of = ''
if raw then
  local ov, ot, od, rest = string.match(raw, '^([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)\\n(.*)$')
  of = rest
  ot = tonumber(ot)
  local older
  if od ~= '1' and ov ~= '' and nv ~= '' and tonumber(ov) ~= tonumber(nv) then
    older = tonumber(nv) < tonumber(ov)
  else
    older = nt < ot
  end
  if older then return 0 end
  if od == nd and of == nf then return 2 end
end
"""

_BODY = """
local NCOL, NDSP = #COL, #DSP
local sub, byte, find = string.sub, string.byte, string.find
local function generic(u)
  if #u > 0 and byte(u, 1) < 16 then return '\\000' .. u end
  for _, mp in ipairs(PREFIXES) do
    if sub(u, 1, #mp[2]) == mp[2] then return mp[1] .. sub(u, #mp[2] + 1) end
  end
  return u
end
local function knode(u)
  if #u > 0 and byte(u, 1) < 16 then return '\\000' .. u end
  if sub(u, 1, NCOL) == COL then
    for i = 1, 2 do
      local mp = PREFIXES[i]
      if sub(u, 1, #mp[2]) == mp[2] then return mp[1] .. sub(u, #mp[2] + 1) end
    end
  end
  return u
end
-- A facts table: s[i] URN (nil for a column until asked), par[i]/path[i] for a column, memos g (generic field)
-- and k (key spelling).
local function facts(text)
  if text == nil or text == false or text == '' then return nil end
  local f = cjson.decode(text)
  local t = {s = {}, par = {}, path = {}, g = {}, k = {}, kc = {}, ent = {}, ch = {}, raw = {}, e = f.e, a = f.a}
  for i, n in ipairs(f.n) do
    if type(n) == 'table' then t.par[i] = n[1] + 1; t.path[i] = n[2] else t.s[i] = n end
  end
  return t
end
local function urn(t, i)
  local u = t.s[i]
  if u == nil then
    u = COL .. urn(t, t.par[i]) .. ',' .. t.path[i] .. ')'
    t.s[i] = u
  end
  return u
end
local function gen(t, i)
  local g = t.g[i]
  if g == nil then
    local pi = t.par[i]
    if pi then
      local pu = urn(t, pi)
      if sub(pu, 1, NDSP) == DSP then
        g = '\\002' .. sub(pu, NDSP + 1) .. ',' .. t.path[i] .. ')'
      else
        g = '\\003' .. pu .. ',' .. t.path[i] .. ')'
      end
    else
      g = generic(t.s[i])
    end
    t.g[i] = g
  end
  return g
end
local function kn(t, i)
  local k = t.k[i]
  if k == nil then k = knode(urn(t, i)); t.k[i] = k end
  return k
end
local ESCAPES = {['\\029'] = '\\029\\001', ['\\030'] = '\\029\\002', ['\\031'] = '\\029\\003'}
local function esc(entry)
  if find(entry, '[\\029-\\031]') then
    entry = string.gsub(entry, '[\\029-\\031]', ESCAPES)
  end
  return entry
end
local counts, nfields, buckets = {}, {}, {}
local function count(key, field, delta)
  local m = counts[key]
  if m == nil then m = {}; counts[key] = m; nfields[key] = 0 end
  local c = m[field]
  if c == nil then nfields[key] = nfields[key] + 1; m[field] = delta else m[field] = c + delta end
end
local function bucket(key, field, entry, delta)
  local m = buckets[key]
  if m == nil then m = {}; buckets[key] = m end
  local d = m[field]
  if d == nil then d = {}; m[field] = d end
  d[entry] = (d[entry] or 0) + delta
end
-- (one side of) edge rel: x -> y in table t: the entry at node x naming neighbour y. Keys and entries are
-- memoised per node (t.kc[rel][side], t.ent, t.ch, t.raw), so an edge costs table lookups, not string building.
local function entry(t, y, child)
  if child then
    local e = t.ch[y]
    if e == nil then e = esc('\001' .. t.path[y]); t.ch[y] = e end
    return e
  end
  local e = t.ent[y]
  if e == nil then e = esc(gen(t, y)); t.ent[y] = e end
  return e
end
local function child(t, y)
  local e = t.raw[y]
  if e == nil then e = '\\001' .. t.path[y]; t.raw[y] = e end
  return e
end
local function side(t, rel, s, x, y, delta)
  local byrel = t.kc[rel]
  if byrel == nil then byrel = {o = {}, i = {}}; t.kc[rel] = byrel end
  local kc = byrel[s]
  local px, py = t.par[x], t.par[y]
  if px then
    local key = kc[px]
    if key == nil then key = p .. s .. 'c:' .. rel .. ':' .. kn(t, px); kc[px] = key end
    bucket(key, t.path[x], entry(t, y, py == px), delta)
  else
    local key = kc[-x]
    if key == nil then key = p .. s .. ':' .. rel .. ':' .. kn(t, x); kc[-x] = key end
    count(key, py == x and child(t, y) or gen(t, y), delta)
  end
end
local function move(t, rel, si, di, delta)
  side(t, rel, 'o', si, di, delta)
  if rel == 'has_column' and t.par[si] == nil and t.par[di] == si then return end
  side(t, rel, 'i', di, si, delta)
end
local function all(t, delta)
  for rel, pairs_ in pairs(t.e) do
    for i = 1, #pairs_, 2 do move(t, rel, pairs_[i] + 1, pairs_[i + 1] + 1, delta) end
  end
end
local function ids(t)
  local out = {}
  for rel, pairs_ in pairs(t.e) do
    for i = 1, #pairs_, 2 do
      local si, di = pairs_[i] + 1, pairs_[i + 1] + 1
      local gs = gen(t, si)
      out[rel .. '\\000' .. #gs .. '\\000' .. gs .. gen(t, di)] = {rel, si, di}  -- unambiguous: s's length
    end
  end
  return out
end
-- ARGV[8…]: the client's write plan for a first write (encode_update): the facts need no reading here
local function planned(i, t)
  local n = #ARGV
  while i <= n do
    local kind, key, k = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
    i = i + 3
    if kind == 'a' then
      for j = i, i + 2 * k - 1 do t.a[#t.a + 1] = ARGV[j] end
      i = i + 2 * k
    elseif kind == 'c' then
      for j = i, i + k - 1 do count(key, ARGV[j], 1) end
      i = i + k
    else
      for j = i, i + 2 * k - 1, 2 do bucket(key, ARGV[j], ARGV[j + 1], 1) end
      i = i + 2 * k
    end
  end
end
local bt = facts(of)
local at
if bt == nil and nd ~= '1' then
  at = {a = {}}
  planned(8, at)
else
  at = facts(nf)
end
if bt == nil then
  -- first write: the plan above
elseif at == nil then
  all(bt, -1)
else
  local be, ae = ids(bt), ids(at)
  for k, e in pairs(be) do if not ae[k] then move(bt, e[1], e[2], e[3], -1) end end
  for k, e in pairs(ae) do if not be[k] then move(at, e[1], e[2], e[3], 1) end end
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
local CHUNK = 500
for key, m in pairs(counts) do
  if nfields[key] == 1 then
    local field, delta = next(m)
    if delta ~= 0 and redis.call('HINCRBY', key, field, delta) <= 0 then redis.call('HDEL', key, field) end
  else
    local fields = {}
    for field, delta in pairs(m) do if delta ~= 0 then fields[#fields + 1] = field end end
    for from = 1, #fields, CHUNK do
      local part = {unpack(fields, from, math.min(from + CHUNK - 1, #fields))}
      local old = redis.call('HMGET', key, unpack(part))
      local set, del = {}, {}
      for i, field in ipairs(part) do
        local c = (tonumber(old[i]) or 0) + m[field]
        if c > 0 then set[#set + 1] = field; set[#set + 1] = c else del[#del + 1] = field end
      end
      if #set > 0 then redis.call('HSET', key, unpack(set)) end
      if #del > 0 then redis.call('HDEL', key, unpack(del)) end
    end
  end
end
for key, m in pairs(buckets) do
  local fields = {}
  for field, _ in pairs(m) do fields[#fields + 1] = field end
  for from = 1, #fields, CHUNK do
    local part = {unpack(fields, from, math.min(from + CHUNK - 1, #fields))}
    local old = redis.call('HMGET', key, unpack(part))
    local set, del = {}, {}
    for i, field in ipairs(part) do
      local v, d = old[i], m[field]
      local added = plus(v, d)
      if added then
        set[#set + 1] = field; set[#set + 1] = added
      else
      local order, have = {}, {}
      if v then
        for e in string.gmatch(v, '([^\\030]*)\\030') do
          local at_ = find(e, '\\031', 1, true)
          local c = 1
          if at_ then c = tonumber(sub(e, at_ + 1)); e = sub(e, 1, at_ - 1) end
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
      if #parts > 0 then set[#set + 1] = field; set[#set + 1] = table.concat(parts) else del[#del + 1] = field end
      end
    end
    if #set > 0 then redis.call('HSET', key, unpack(set)) end
    if #del > 0 then redis.call('HDEL', key, unpack(del)) end
  end
end
local ak = p .. 'a:' .. entity
local ba, aa = {}, {}
if bt then for i = 1, #bt.a, 2 do ba[bt.a[i]] = bt.a[i + 1] end end
if at then for i = 1, #at.a, 2 do aa[at.a[i]] = at.a[i + 1] end end
for name, _ in pairs(ba) do
  if aa[name] == nil then redis.call('HDEL', ak, name) end
end
for name, value in pairs(aa) do redis.call('HSET', ak, name, value) end
redis.call('SET', rk, nv .. '\\n' .. ARGV[5] .. '\\n' .. nd .. '\\n' .. nf)
return 1
"""
