--[[ recur: the scripting library of the generator.

A script describes a mixer and its kernel variants; it computes nothing.
Operators on expressions build a graph (hash-consed and constant-folded in
C, script/expr.c); the generator differentiates it, so a mixer needs no
hand-written backward. Every mistake is reported at the script's own
FILE:LINE, and the generator then writes nothing.

    local R = require "recur"

  Mixer
    m = R.mixer(name, { k = 64, controller = nil, dynamic_per_token = nil })
        name: identifier. k: channels per head (default 64). controller: a
        string for the results' "controller" field (nil = none).
        dynamic_per_token: shape expression such as "2*D" (default: the
        number of token projections, or "<n>*D" for n block-diagonal ones).
        Shape expressions (here and in rules) are checked where they are
        written: the language of util/shapex.h over B, L, D, K and H.
    m.x, m.h, m.first          leaves: input element, state (only in the
                               output), 1 at a sequence's first token

  Parameters (init is one of R.zeros(), R.const(v), R.normal(std),
  R.normal_rsqrt_k() -- std 1/sqrt(K) --, R.decay(lo, hi) -- lam =
  log(exp(-0.5*log(u)) - 1), u ~ U[lo, hi], RecurrentGemma's a_param)
    p = m:param(name, "channel", init)     [D]        -> expression
    p = m:param(name, "scalar", init)      one value  -> expression
    W = m:param(name, "blockdiag", init)   [H][K][K]  -> a weight handle,
        usable only through m:project (arithmetic on it is an error)

  Projections of x (the closed set the kernel templates run fast)
    e = m:project(name, W, bias)           block-diagonal, per channel:
        e[t, h*K+j] = sum_i x[t, h*K+i] W[h][i][j] + bias[h*K+j]
        W: a blockdiag weight, bias: a channel parameter
    e = m:token_project(name, w, bias, { scale = "rsqrt_d" | "none" })
        per token: e[t] = bias + scale * sum_c w[c] x[t,c]
        w: a channel parameter, bias: a scalar parameter; scale defaults to
        "none" (1), "rsqrt_d" is 1/sqrt(D)

  Expressions
    operators  a + b, a - b, a * b, a / b, -a, a ^ n (integer n, |n| <= 16);
               numbers promote to constants, which must be finite in
               float32 (|v| <= 3.4e38: the kernels compute in float32).
               < <= > >= == are errors (Lua would turn them into
               booleans): use R.gt / R.lt.
    functions  R.exp R.log R.sigmoid R.softplus R.sqrt R.tanh R.recip R.rsqrt
               R.sqrtb (sqrt whose derivative is bounded: 1/sqrt(max(4z,1e-6)))
               R.min(a, b) R.max(a, b) R.gt(a, b) R.lt(a, b) (1 or 0)
               R.where(c, a, b) (c ~= 0 ? a : b; no derivative flows to c)
               On plain numbers they return plain numbers.
    tostring(e) prints the expression in infix form.

  Recurrence and output (each exactly once)
    m:recurrence { log_a = e1, b = e2 }    h = exp(log_a) * h_prev + b;
                                           neither may depend on m.h
    m:output(y)                            y may use h, x, params, projections
    log_a, b and y together are at most 1024 nodes: the kernels evaluate
    every node per element.
    The templates take at most 6 block-diagonal projections (bwd_apply's
    shared memory) and, with shared_sfu, at most 8 per-token values; a grid
    past either is refused at its line.

  Variant grid
    return R.variants {
      mixer = m,                           required
      chunk = { 8, 16, 32, 64 },           required, subset of 8 16 32 64
      prefix = { 32, 64, 128 },            required, subset of 32 64 128
      fused = { true, false },             lists of booleans, default { false } ({ true } where every
                                           variant is apart: K ~= 64, or apart = { true })
      scan = { "hierarchical", "lookback", "onepass" },   default { "hierarchical" }
      shared_sfu = { false }, fused_output = { false }, fused_write = { false },
      resets = { false },                  { true }: the kernels also take per-token
                                           reset marks (packed documents, util/seqstate.h)
      states = { false },                  { true }: and initial and final states (h0, hT,
                                           dhT, dh0)
      map = { false },                     { true }: and the row's map (map_loga, map_h:
                                           what a split across devices exchanges); needs
                                           states = { true } in the same grid
      docs = { false },                    { true }: packed documents with a state each
                                           (cu_seqlens [N + 1] over one row, h0/hT/dhT/dh0
                                           [N][D]), and the reset/h0 form as well; every
                                           start and end handled per token; without resets
                                           and states in the same grid
      apart = { K ~= 64 },                 { true }: the block-diagonal projections run in
                                           kernels of their own (tensor cores, heads of any
                                           K = 16..256 in steps of 16), stored bf16 for the
                                           scans; the only form for heads other than 64;
                                           fused = true, no token projection
      scan_proj = { false },               { true }: apart, but the forward's projections
                                           run inside fwd_scan on wgmma (no proj_fwd) on
                                           sm_90a; other targets build it with proj_fwd.
                                           K a multiple of 64, scan lookback or onepass,
                                           prefix 32, chunk 8
      proj_ahead = { false },              { true }: scan_proj's fwd_scan in resident
                                           blocks taking tiles by ticket, a producer
                                           warpgroup projecting the tile the scan
                                           warpgroups sweep next (sm_90a; K a multiple
                                           of 64 from 128; no docs or map)
      recompute = { false },               { true }: apart, but the forward keeps no
                                           projection for the backward, which runs
                                           proj_fwd again first (the same kernel, the
                                           same bits): 4 bytes an element fewer held
                                           between the passes, one projection kernel
                                           more in the backward; not with scan_proj
      controller = "name",                 default: the mixer's controller
      rules = { { "D % 64 == 0", "message" }, ... },   shape rules (util/shapex.h)
    }
    The grid is the cartesian product (at most 64 variants); each variant is
    named [apart_][scanproj_[ahead_]|recompute_][docs_|resets_][states_][map_][fused_output_][fused_write_][shared_sfu_][fused_]grouped_prefix{P}_{SCAN}_chunk{C}
    and is "materialized" (gates written to memory) when not fused. For a
    mixer with token projections, fused = false means the controller runs in
    a separate pass and the gates stay inside the scan kernels (the only
    form these templates generate). shared_sfu needs a token projection.
    scan selects the forward's carry across time tiles: "hierarchical"
    (reduce, carry and apply kernels: three launches, three sweeps of the
    gates) or "lookback" (one kernel: each tile publishes its map, then
    folds the maps of the 15 tiles before it onto the end state of the
    16th; two sweeps; the same bits on every run) or "onepass" (the
    look-back forward, and a backward of one kernel: each group publishes
    its adjoint map after its first sweep and takes the message from its
    right through the groups between it and its block's last; no reduce
    sweep over x and dy; the same bits on every run).
  Decode step
    return R.decode { mixer = m, controller = "name", rules = {...} }
    One variant, named <mixer>_decode (scan "decode"): a forward only, which
    advances a pool of states fp32 [S][D] by the call's L tokens (1 to a
    few dozen: it walks them in order) and writes their y, for sampling.
    Row b reads the state of slot index(b) of h0 (no index: slot b; a
    negative slot skips the row) and writes hT at the same slot, which may be h0 itself
    (in place); the mixer's projections and token stage run inside it.
    mma = true (heads of 64, 128 or 256 -- a multiple of 64 --, block-
    diagonal projections): the projections on tensor cores, 64 rows and 64
    channels per block (<mixer>_decode_mma), with the
    weights rounded to bf16 as the scans round them, where the plain step
    runs them as fp32 multiply-adds with fp32 weights, 8 * max(1, 256 / K)
    rows per block.
    rows = true (no block-diagonal projections; widths up to 8192): one
    kernel, a block of 256 threads per row over its whole width
    (<mixer>_decode_rows), the token stage's sums over the width made
    inside it, where the plain step runs them in a kernel ahead of its own.
    A script may return it beside R.variants sets, or alone.
    A script returns one R.variants{...} or a list of them. A manifest
    holds one mixer per name and each variant once: a set listed twice,
    or two sets with the same variants and rules, are generated once;
    two different mixers of one name, or two sets sharing only some
    variants, are refused at the second set's line.

Errors are raised as located error objects (metatable "recur.error", with
`where` = "FILE:LINE:" of the user's code and `msg`), found by core.site():
that keeps the user's line even through `return R.variants{...}`, a tail
call that removes the user's frame from the stack, and keeps full paths
where Lua would shorten them.
]]

local core = require "recur.core"

-- The standard functions used here, as they are when this file loads
-- (before any script runs: script/script.c loads it first), so that a
-- script that replaces string.match or math.type changes nothing checked
-- here. Strings are never used through methods (s:match), which would go
-- through the string metatable a script can change too.
local type, select, error, pairs, ipairs, tostring, tonumber = type, select, error, pairs, ipairs, tostring, tonumber
local rawget, getmetatable, setmetatable = rawget, getmetatable, setmetatable
local string = { format = string.format, match = string.match, sub = string.sub }
local table = { sort = table.sort, concat = table.concat, unpack = table.unpack }
local math = { huge = math.huge, exp = math.exp, log = math.log, abs = math.abs, max = math.max, min = math.min,
               sqrt = math.sqrt, floor = math.floor, type = math.type }
local utf8len = utf8.len

local R = {}

local MAXPARAM, MAXPROJ, MAXVAR, MAXRULE, MAXNAME = 16, 8, 64, 8, 47   -- script/mixer.h
local MAXNODES, MAXK = 1024, 1048576                                  -- script/mixer.h, script/sc_read.c
local FLT_MAX = 3.4028234663852886e38   -- the kernels compute in float32
local CHUNKS, PREFIXES, SCANS = { 8, 16, 32, 64 }, { 32, 64, 128 }, { "hierarchical", "lookback", "onepass" }

local Expr = { __name = "recur.expr" }
local Weight = { __name = "recur.weight" }
local Mixer = { __name = "recur.mixer" }
local Init = { __name = "recur.init" }
local Set = { __name = "recur.variantset" }
local Error = { __name = "recur.error" }
Error.__tostring = function(e) return e.where .. " " .. e.msg end

-- Private state of each mixer, keyed by its (read-only) proxy table.
local S = setmetatable({}, { __mode = "k" })

---------------------------------------------------------------- errors

local function fail(fmt, ...)
  local msg = select("#", ...) > 0 and string.format(fmt, ...) or fmt
  error(setmetatable({ where = core.site(), msg = msg }, Error), 0)
end

-- The user's file and line, as two values.
local function site()
  local src, line = string.match(core.site(), "^(.*):(%d+):$")
  return src or "?", tonumber(line) or 0
end

-- a string as a message quotes it: its first 60 characters
local function quote(v)
  if #v > 60 then return string.format("%q... (%d characters)", string.sub(v, 1, 60), #v) end
  return string.format("%q", v)
end

local function describe(v)
  local mt = getmetatable(v)
  if mt == Expr then return "an expression" end
  if mt == Weight then return "the block-diagonal weight " .. v.name end
  if mt == Mixer then return "a mixer" end
  if mt == Init then return "an init" end
  if mt == Set then return "a variant set" end
  if type(v) == "string" then return "the string " .. quote(v) end
  if type(v) == "nil" then return "nil" end
  if type(v) == "number" or type(v) == "boolean" then return type(v) .. " " .. tostring(v) end
  return "a " .. type(v)
end

local function show(v)
  if type(v) == "string" then return quote(v) end
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  return describe(v)
end

local function weight_fail(w)
  fail("%s is a block-diagonal weight: use it through m:project", w.name)
end

-- A plain table (not one of ours), for option tables.
local function plain(v)
  return type(v) == "table" and getmetatable(v) == nil
end

local function check_keys(t, known, what)
  local list = {}
  for k in pairs(known) do list[#list + 1] = k end
  table.sort(list)
  for k in pairs(t) do
    if not known[k] then
      fail("unknown option %s of %s (known: %s)", show(k), what, table.concat(list, ", "))
    end
  end
end

---------------------------------------------------------------- expressions

local function wrap(m, id, extra)
  local e = { id = id, mixer = m }
  if extra then for k, v in pairs(extra) do e[k] = v end end
  return setmetatable(e, Expr)
end

-- The node id of v (an expression of mixer m, or a number) for `what`.
local function node(m, v, what)
  local mt = getmetatable(v)
  if mt == Expr then
    if v.mixer ~= m then
      fail("%s: an expression of mixer %s is used with mixer %s; expressions of two mixers cannot be mixed",
           what, S[v.mixer].name, S[m].name)
    end
    return v.id
  elseif mt == Weight then
    weight_fail(v)
  elseif type(v) == "number" then
    if not (math.abs(v) <= FLT_MAX) then
      fail("%s: constants must be finite in float32, in which the kernels compute (|v| <= 3.4e38), got %s",
           what, tostring(v))
    end
    return core.const(S[m].g, v)
  end
  fail("%s: expected a number or an expression, got %s", what, describe(v))
end

-- The mixer owning the first expression among the operands (nil when all
-- are numbers); anything that is neither is an error.
local function owner(what, n, ...)
  local m
  for i = 1, n do
    local v = select(i, ...)
    local mt = getmetatable(v)
    if mt == Expr then
      m = m or v.mixer
    elseif mt == Weight then
      weight_fail(v)
    elseif type(v) ~= "number" then
      fail("%s: expected a number or an expression, got %s", what, describe(v))
    end
  end
  return m
end

-- Builds node `op` over n operands, or computes numf on plain numbers.
local function build(what, op, numf, n, ...)
  local m = owner(what, n, ...)
  if not m then return numf(...) end
  local ids = {}
  for i = 1, n do ids[i] = node(m, (select(i, ...)), what) end
  return wrap(m, core.op(S[m].g, op, table.unpack(ids, 1, n)))
end

local function sigmoid_n(z)
  if z >= 0 then return 1 / (1 + math.exp(-z)) end
  local e = math.exp(z)
  return e / (1 + e)
end
local function softplus_n(z) return math.log(1 + math.exp(-math.abs(z))) + math.max(z, 0) end
local function tanh_n(z)
  local e = math.exp(-2 * math.abs(z))
  local t = (1 - e) / (1 + e)
  return z < 0 and -t or t
end

local UNARY = {
  exp = math.exp, log = math.log, sigmoid = sigmoid_n, softplus = softplus_n,
  sqrt = math.sqrt, sqrtb = math.sqrt, tanh = tanh_n,
  recip = function(z) return 1 / z end, rsqrt = function(z) return 1 / math.sqrt(z) end,
}
for name, numf in pairs(UNARY) do
  R[name] = function(a) return build("R." .. name, name, numf, 1, a) end
end

function R.min(a, b) return build("R.min", "min", math.min, 2, a, b) end
function R.max(a, b) return build("R.max", "max", math.max, 2, a, b) end
function R.gt(a, b) return build("R.gt", "gt", function(x, y) return x > y and 1 or 0 end, 2, a, b) end
function R.lt(a, b) return build("R.lt", "gt", function(x, y) return x > y and 1 or 0 end, 2, b, a) end
function R.where(c, a, b)
  return build("R.where", "where", function(x, y, z) if x ~= 0 then return y end return z end, 3, c, a, b)
end

Expr.__add = function(a, b) return build("operand of +", "add", function(x, y) return x + y end, 2, a, b) end
Expr.__sub = function(a, b) return build("operand of -", "sub", function(x, y) return x - y end, 2, a, b) end
Expr.__mul = function(a, b) return build("operand of *", "mul", function(x, y) return x * y end, 2, a, b) end
Expr.__div = function(a, b) return build("operand of /", "div", function(x, y) return x / y end, 2, a, b) end
Expr.__unm = function(a) return build("operand of unary -", "neg", function(x) return -x end, 1, a) end
Expr.__pow = function(a, n)
  if getmetatable(a) ~= Expr then
    fail("operand of ^: only an expression can be raised to a power, and the exponent must be a number")
  end
  if type(n) ~= "number" or n ~= math.floor(n) or math.abs(n) > 16 then
    fail("operand of ^: the exponent must be an integer in [-16, 16] (use R.exp(p * R.log(x)) otherwise), got %s", show(n))
  end
  local r = 1
  for _ = 1, math.abs(n) do r = r * a end
  if n == 0 then return wrap(a.mixer, node(a.mixer, 1, "^")) end
  if n < 0 then r = R.recip(r) end
  return r
end
local function compare_fail()
  fail("expressions cannot be compared with < <= > >= ==: use R.gt(a, b) or R.lt(a, b), which build a 1/0 node")
end
Expr.__lt, Expr.__le, Expr.__eq = compare_fail, compare_fail, compare_fail
for _, mm in ipairs { "__idiv", "__mod", "__band", "__bor", "__bxor", "__shl", "__shr", "__bnot", "__len" } do
  Expr[mm] = function() fail("operator %s is not defined on expressions", string.sub(mm, 3)) end
end
Expr.__concat = function() fail("expressions are not strings: use tostring(e) to print one") end
Expr.__call = function() fail("an expression is not a function") end
Expr.__index = function(_, k) fail("expressions have no field %s", show(k)) end
Expr.__newindex = function() fail("expressions are read-only") end
Expr.__tostring = function(e) return "expr(" .. core.print(S[e.mixer].g, e.id) .. ")" end

for _, mm in ipairs { "__add", "__sub", "__mul", "__div", "__unm", "__pow", "__idiv", "__mod",
                      "__lt", "__le", "__concat", "__call", "__len" } do
  Weight[mm] = function(a, b)
    weight_fail(getmetatable(a) == Weight and a or b)
  end
end
Weight.__tostring = function(w) return "weight(" .. w.name .. ")" end

---------------------------------------------------------------- inits

-- initial values are float32 too
local function finite(v) return type(v) == "number" and math.abs(v) <= FLT_MAX end

-- one line of text: valid UTF-8, no control characters (messages, JSON)
local function text(v) return type(v) == "string" and utf8len(v) ~= nil and not string.match(v, "%c") end
local function init(kind, a, b, rsqrt_k)
  return setmetatable({ kind = kind, a = a or 0, b = b or 0, rsqrt_k = rsqrt_k or false }, Init)
end

function R.zeros() return init("zeros") end
function R.const(v)
  if not finite(v) then fail("R.const(v): v must be a finite number, got %s", show(v)) end
  return init("const", v)
end
function R.normal(std)
  if not finite(std) or std <= 0 then fail("R.normal(std): std must be a positive number, got %s", show(std)) end
  return init("normal", std)
end
function R.normal_rsqrt_k() return init("normal", 0, 0, true) end
function R.decay(lo, hi)
  if not (finite(lo) and finite(hi) and lo > 0 and lo <= hi and hi < 1) then
    fail("R.decay(lo, hi) needs 0 < lo <= hi < 1, got %s, %s", show(lo), show(hi))
  end
  return init("decay", lo, hi)
end

---------------------------------------------------------------- mixers

local methods = {}

Mixer.__index = function(m, k)
  local st = S[m]
  if k == "x" or k == "h" or k == "first" then return st.leaves[k] end
  if k == "name" then return st.name end
  local f = methods[k]
  if f then return f end
  fail("mixer %s has no field %s", st.name, show(k))
end
Mixer.__newindex = function(m)
  fail("mixer %s is read-only: declare with m:param, m:project, m:recurrence, m:output", S[m].name)
end
Mixer.__tostring = function(m) return "mixer(" .. S[m].name .. ")" end

local function check_ident(name, what)
  if type(name) ~= "string" or not string.match(name, "^[%a_][%w_]*$") then
    fail("%s name must be an identifier, got %s", what, describe(name))
  end
  if #name > MAXNAME then fail("%s name %s is longer than %d characters", what, name, MAXNAME) end
end

local function self_of(m, method)
  if getmetatable(m) ~= Mixer then
    fail("m:%s needs a mixer: call it with a colon, m:%s(...)", method, method)
  end
  return S[m]
end

-- Parameters and projections share one namespace (both name a buffer).
local function declare(st, name, what)
  check_ident(name, what)
  -- a set holds the mixer as R.variants saw it, and its graph is shared:
  -- a buffer declared later would be a leaf no set knows
  if st.used_at then
    fail("mixer %s is already in a variant set (line %d): declare its parameters and projections before R.variants",
         st.name, st.used_at)
  end
  local prev = st.names[name]
  if prev then
    fail("duplicate name %s: mixer %s already has a %s of that name (line %d)", name, st.name, prev.what, prev.line)
  end
  local _, line = site()
  st.names[name] = { what = what, line = line }
  return line
end

-- The index (0-based) and kind of the parameter that expression v is, or nil.
local function param_of(m, v)
  if getmetatable(v) ~= Expr or v.mixer ~= m then return nil end
  local idx = rawget(v, "param")
  if idx == nil then return nil end
  return idx, S[m].params[idx + 1].kind
end

function R.mixer(name, opts)
  check_ident(name, "mixer")
  if opts ~= nil and not plain(opts) then fail("R.mixer(name, opts): opts must be a table, got %s", describe(opts)) end
  opts = opts or {}
  check_keys(opts, { k = true, controller = true, dynamic_per_token = true }, "R.mixer")
  local k = opts.k == nil and 64 or opts.k
  if math.type(k) ~= "integer" or k < 1 or k > MAXK then
    fail("R.mixer: k (channels per head) must be an integer from 1 to %d, got %s", MAXK, show(k))
  end
  local ctl = opts.controller
  if ctl ~= nil and (not text(ctl) or ctl == "" or #ctl > MAXNAME) then
    fail("R.mixer: controller must be a non-empty line of text of at most %d characters, got %s", MAXNAME, describe(ctl))
  end
  local dyn = opts.dynamic_per_token
  if dyn ~= nil and type(dyn) ~= "string" then
    fail("R.mixer: dynamic_per_token must be a shape expression such as \"2*D\", got %s", describe(dyn))
  end
  if dyn and #dyn > MAXNAME then fail("R.mixer: dynamic_per_token is longer than %d characters", MAXNAME) end
  local why = dyn and core.shape_check(dyn)
  if why then fail("R.mixer: dynamic_per_token: %s", why) end
  local src, line = site()
  local m = setmetatable({}, Mixer)
  local g = core.graph()
  S[m] = {
    name = name, k = k, controller = ctl or "", dyn = dyn, script = src, line = line, g = g,
    params = {}, projs = {}, names = {},
    leaves = {
      x = wrap(m, core.leaf(g, "x", 0)),
      h = wrap(m, core.leaf(g, "h", 0)),
      first = wrap(m, core.leaf(g, "first", 0)),
    },
  }
  return m
end

local KINDS = { channel = true, blockdiag = true, scalar = true }

function methods.param(m, name, kind, ini)
  local st = self_of(m, "param")
  check_ident(name, "parameter")
  if not KINDS[kind] then
    fail("unknown parameter kind %s: expected \"channel\" ([D]), \"blockdiag\" ([H][K][K]) or \"scalar\"", show(kind))
  end
  if getmetatable(ini) ~= Init then
    fail("unknown init %s for parameter %s: use R.zeros(), R.const(v), R.normal(std), R.normal_rsqrt_k() or R.decay(lo, hi)",
         describe(ini), name)
  end
  if #st.params >= MAXPARAM then fail("mixer %s has more than %d parameters", st.name, MAXPARAM) end
  local line = declare(st, name, "parameter")
  local idx = #st.params
  st.params[idx + 1] = { name = name, kind = kind, init = ini.kind, a = ini.a, b = ini.b,
                         rsqrt_k = ini.rsqrt_k, line = line }
  if kind == "blockdiag" then
    return setmetatable({ name = name, index = idx, mixer = m }, Weight)
  end
  return wrap(m, core.leaf(st.g, "param", idx), { param = idx })
end

local function add_proj(m, st, name, kind, weight, bias, rsqrt_d)
  if #st.projs >= MAXPROJ then fail("mixer %s has more than %d projections", st.name, MAXPROJ) end
  local line = declare(st, name, "projection")
  local idx = #st.projs
  st.projs[idx + 1] = { name = name, kind = kind, weight = weight, bias = bias, rsqrt_d = rsqrt_d, line = line }
  return wrap(m, core.leaf(st.g, "proj", idx), { proj = idx })
end

function methods.project(m, name, W, bias, opts)
  local st = self_of(m, "project")
  check_ident(name, "projection")
  if getmetatable(W) ~= Weight or W.mixer ~= m then
    fail("m:project(%q, W, bias): W must be a block-diagonal weight of mixer %s (a parameter of kind \"blockdiag\"), got %s",
         name, st.name, describe(W))
  end
  local b, bkind = param_of(m, bias)
  if bkind ~= "channel" then
    fail("m:project(%q, W, bias): the bias must be a channel parameter of mixer %s, got %s", name, st.name,
         bkind and ("the " .. bkind .. " parameter " .. st.params[b + 1].name) or describe(bias))
  end
  if opts ~= nil then fail("m:project(%q, W, bias) takes no options", name) end
  return add_proj(m, st, name, "blockdiag", W.index, b, false)
end

function methods.token_project(m, name, w, bias, opts)
  local st = self_of(m, "token_project")
  check_ident(name, "projection")
  local wi, wkind = param_of(m, w)
  if wkind ~= "channel" then
    fail("m:token_project(%q, w, bias): w must be a channel parameter of mixer %s, got %s", name, st.name,
         wkind and ("the " .. wkind .. " parameter " .. st.params[wi + 1].name) or describe(w))
  end
  local b, bkind = param_of(m, bias)
  if bkind ~= "scalar" then
    fail("m:token_project(%q, w, bias): the bias must be a scalar parameter of mixer %s, got %s", name, st.name,
         bkind and ("the " .. bkind .. " parameter " .. st.params[b + 1].name) or describe(bias))
  end
  if opts ~= nil and not plain(opts) then fail("m:token_project: options must be a table, got %s", describe(opts)) end
  opts = opts or {}
  check_keys(opts, { scale = true }, "m:token_project")
  local scale = opts.scale == nil and "none" or opts.scale
  if scale ~= "none" and scale ~= "rsqrt_d" then
    fail("m:token_project: scale must be \"none\" or \"rsqrt_d\", got %s", show(scale))
  end
  return add_proj(m, st, name, "token", wi, b, scale == "rsqrt_d")
end

-- The nodes of the mixer's expressions with new roots added, within MAXNODES.
local function check_size(st, ...)
  local roots = {}
  for _, id in ipairs { st.log_a or false, st.b or false, st.y or false, ... } do
    if id then roots[#roots + 1] = id end
  end
  local n = core.size(st.g, table.unpack(roots))
  if n > MAXNODES then
    fail("mixer %s: its expressions have %d nodes (log_a, b and the output together); the kernels evaluate "
         .. "every node per element: at most %d", st.name, n, MAXNODES)
  end
end

function methods.recurrence(m, t)
  local st = self_of(m, "recurrence")
  if not plain(t) then fail("m:recurrence takes a table { log_a = ..., b = ... }, got %s", describe(t)) end
  check_keys(t, { log_a = true, b = true }, "m:recurrence")
  if st.log_a then fail("mixer %s already has a recurrence (line %d)", st.name, st.rec_line) end
  if t.log_a == nil then fail("m:recurrence needs log_a") end
  if t.b == nil then fail("m:recurrence needs b") end
  local la = node(m, t.log_a, "log_a of m:recurrence")
  local b = node(m, t.b, "b of m:recurrence")
  if core.depends(st.g, la, "h") then fail("log_a must not depend on h: the recurrence must stay linear") end
  if core.depends(st.g, b, "h") then fail("b must not depend on h: the recurrence must stay linear") end
  check_size(st, la, b)
  local _, line = site()
  st.log_a, st.b, st.rec_line = la, b, line
end

function methods.output(m, y)
  local st = self_of(m, "output")
  if st.y then fail("mixer %s already has an output (line %d)", st.name, st.out_line) end
  if y == nil then fail("m:output needs an expression") end
  local id = node(m, y, "m:output")
  check_size(st, id)
  local _, line = site()
  st.y, st.out_line = id, line
end

---------------------------------------------------------------- variants

local function int_list(v, what, allowed)
  if not plain(v) or #v == 0 then
    fail("%s must be a non-empty list such as { %s }, got %s", what, table.concat(allowed, ", "), describe(v))
  end
  local ok, seen = {}, {}
  for _, a in ipairs(allowed) do ok[a] = true end
  for k in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > #v then fail("%s must be a list (no named keys)", what) end
  end
  for _, x in ipairs(v) do
    if not ok[x] then
      fail("%s %s is not one of %s", what, show(x), table.concat(allowed, ", "))
    end
    if seen[x] then fail("%s %s is listed twice", what, show(x)) end
    seen[x] = true
  end
  return v
end

local function bool_list(v, what)
  if v == nil then return { false } end
  if not plain(v) or #v == 0 then fail("%s must be a non-empty list of booleans such as { true, false }, got %s", what, describe(v)) end
  local seen = {}
  for k in pairs(v) do
    if math.type(k) ~= "integer" or k < 1 or k > #v then fail("%s must be a list (no named keys)", what) end
  end
  for _, x in ipairs(v) do
    if type(x) ~= "boolean" then fail("%s must hold booleans, got %s", what, describe(x)) end
    if seen[x] then fail("%s %s is listed twice", what, tostring(x)) end
    seen[x] = true
  end
  return v
end

local function rule_list(v)
  if v == nil then return {} end
  if not plain(v) then fail("rules must be a list of { expr, message } pairs, got %s", describe(v)) end
  if #v > MAXRULE then fail("at most %d rules per R.variants, got %d", MAXRULE, #v) end
  local out = {}
  for i, r in ipairs(v) do
    if not plain(r) or type(r[1]) ~= "string" or type(r[2]) ~= "string" then
      fail("rule %d must be a pair of strings { \"D %% 64 == 0\", \"message\" }", i)
    end
    if #r[1] > 127 then fail("rule %d: the expression is longer than 127 characters", i) end
    if #r[2] > 159 then fail("rule %d: the message is longer than 159 characters", i) end
    local why = core.shape_check(r[1])
    if why then fail("rule %d: %s", i, why) end
    if not text(r[2]) then fail("rule %d: the message must be one line of text (UTF-8, no control characters)", i) end
    out[i] = { expr = r[1], message = r[2] }
  end
  return out
end

-- The set a script returns: a snapshot of the mixer (what the user declares
-- afterwards does not change it), its variants and its rules.
local function make_set(st, vars, rules, ntoken, nblock)
  local dyn = st.dyn
  if not dyn then
    dyn = ntoken > 0 and tostring(ntoken) or (nblock > 0 and (nblock .. "*D") or "0")
  end
  local function copy(list)
    local out = {}
    for i, e in ipairs(list) do
      local c = {}
      for k, v in pairs(e) do c[k] = v end
      out[i] = c
    end
    return out
  end
  local desc = {
    name = st.name, k = st.k, controller = st.controller, dyn_per_token = dyn, script = st.script,
    line = st.line, rec_line = st.rec_line, out_line = st.out_line,
    graph = st.g, log_a = st.log_a, b = st.b, y = st.y,
    params = copy(st.params), projs = copy(st.projs),
  }
  return setmetatable({ mixer = desc, variants = vars, rules = rules }, Set)
end

-- The mixer of a set's options, with its recurrence and output declared.
local function set_mixer(o, what)
  local m = o.mixer
  if getmetatable(m) ~= Mixer then fail("%s needs mixer = a mixer made by R.mixer, got %s", what, describe(m)) end
  local st = S[m]
  if not st.log_a then
    fail("mixer %s has no recurrence: call m:recurrence { log_a = ..., b = ... } before %s", st.name, what)
  end
  if not st.y then fail("mixer %s has no output: call m:output(y) before %s", st.name, what) end
  return st
end

local function proj_counts(st)
  local ntoken, nblock = 0, 0
  for _, p in ipairs(st.projs) do
    if p.kind == "token" then ntoken = ntoken + 1 else nblock = nblock + 1 end
  end
  return ntoken, nblock
end

local OPTIONS = { mixer = true, chunk = true, prefix = true, fused = true, shared_sfu = true, scan = true,
                  fused_output = true, fused_write = true, resets = true, states = true, controller = true,
                  rules = true, apart = true, docs = true, map = true, scan_proj = true,
                  proj_ahead = true, recompute = true }

function R.variants(o)
  if not plain(o) then fail("R.variants takes a table { mixer = m, chunk = {...}, prefix = {...}, ... }, got %s", describe(o)) end
  check_keys(o, OPTIONS, "R.variants")
  local st = set_mixer(o, "R.variants")
  local chunks = int_list(o.chunk, "chunk", CHUNKS)
  local prefixes = int_list(o.prefix, "prefix", PREFIXES)
  -- heads of other than 64 channels take the projections apart: the scan
  -- kernels hold 64 channels of a head, which sees its whole input row
  local apart = o.apart == nil and { st.k ~= 64 } or bool_list(o.apart, "apart")
  -- a grid apart throughout computes its gates in the scans: fused by default
  local all_apart = true
  for _, ap in ipairs(apart) do all_apart = all_apart and ap end
  local fused = (o.fused == nil and all_apart) and { true } or bool_list(o.fused, "fused")
  local sproj = bool_list(o.scan_proj, "scan_proj")
  for _, sp in ipairs(sproj) do
    if sp then
      for _, ap in ipairs(apart) do
        if not ap then fail("scan_proj = true runs the projections apart inside fwd_scan: give apart = { true }") end
      end
    end
  end
  local pahead = bool_list(o.proj_ahead, "proj_ahead")
  for _, pa in ipairs(pahead) do
    for _, sp in ipairs(sproj) do
      if pa and not sp then
        fail("proj_ahead = true is a form of scan_proj's fwd_scan: give scan_proj = { true }")
      end
    end
  end
  local recomp = bool_list(o.recompute, "recompute")
  for _, rc in ipairs(recomp) do
    if rc then
      for _, ap in ipairs(apart) do
        if not ap then
          fail("recompute = true runs the projections' kernel again in the backward: give apart = { true }")
        end
      end
      for _, sp in ipairs(sproj) do
        if sp then
          fail("recompute = true runs proj_fwd again in the backward, and scan_proj has no proj_fwd "
               .. "(fwd_scan projects): leave one of them out of the grid")
        end
      end
    end
  end
  local sfu = bool_list(o.shared_sfu, "shared_sfu")
  local fout = bool_list(o.fused_output, "fused_output")
  local fwrite = bool_list(o.fused_write, "fused_write")
  local resets = bool_list(o.resets, "resets")
  local states = bool_list(o.states, "states")
  local docs = bool_list(o.docs, "docs")
  local maps = bool_list(o.map, "map")
  for _, mp in ipairs(maps) do
    for _, dc in ipairs(docs) do
      if mp and dc then fail("map = true is of the reset/h0 form, one map a row: leave docs out of its grid") end
    end
    for _, hs in ipairs(states) do
      if mp and not hs then
        fail("map = true: the row's map comes with the states (map_h = hT - exp(map_loga) h0): give states = { true }")
      end
    end
  end
  for _, dc in ipairs(docs) do
    if dc then
      for _, x in ipairs(resets) do if x then fail("docs = true takes reset marks itself: leave resets out of its grid") end end
      for _, x in ipairs(states) do if x then fail("docs = true takes the states itself: leave states out of its grid") end end
    end
  end
  local scans = o.scan == nil and { "hierarchical" } or int_list(o.scan, "scan", SCANS)
  for _, sp in ipairs(sproj) do
    for _, sc in ipairs(scans) do
      if sp and sc == "hierarchical" then
        fail("scan_proj = true projects inside the look-back fwd_scan: give scan = { \"lookback\" } or { \"onepass\" }")
      end
    end
  end
  local ctl = o.controller
  if ctl ~= nil and (not text(ctl) or ctl == "" or #ctl > MAXNAME) then
    fail("controller must be a non-empty line of text of at most %d characters, got %s", MAXNAME, describe(ctl))
  end
  ctl = ctl or st.controller
  local rules = rule_list(o.rules)

  local ntoken, nblock = proj_counts(st)
  for _, ap in ipairs(apart) do
    if not ap and st.k ~= 64 then
      fail("mixer %s has heads of %d channels: its block-diagonal projections run apart from the scan kernels, "
           .. "which hold 64 channels (apart = { true }, the default for it)", st.name, st.k)
    end
    if ap and nblock == 0 then fail("apart = true: mixer %s has no block-diagonal projection to run apart", st.name) end
    if ap and ntoken > 0 then
      fail("apart = true: mixer %s has a per-token projection; the templates run block-diagonal projections apart "
           .. "only for mixers without a token stage", st.name)
    end
    if ap then
      for _, fu in ipairs(fused) do
        if not fu then
          fail("apart = true stores the projections, and the scan kernels compute the gates from them: "
               .. "fused = false would store the gates as well; use fused = { true }")
        end
      end
    end
  end
  for _, s in ipairs(sfu) do
    if s and ntoken == 0 then
      fail("shared_sfu needs per-token shared expressions; mixer %s has none", st.name)
    end
  end
  local total = #chunks * #prefixes * #fused * #sfu * #fout * #fwrite * #scans * #resets * #states * #apart * #docs * #maps
                * #sproj * #pahead * #recomp
  if total > MAXVAR then
    fail("the grid has %d variants (chunk %d x prefix %d x fused %d x shared_sfu %d x fused_output %d x fused_write %d x scan %d x resets %d x states %d x apart %d x docs %d x map %d x scan_proj %d x proj_ahead %d x recompute %d); at most %d per R.variants",
         total, #chunks, #prefixes, #fused, #sfu, #fout, #fwrite, #scans, #resets, #states, #apart, #docs, #maps, #sproj,
         #pahead, #recomp, MAXVAR)
  end

  local file, line = site()
  st.used_at = st.used_at or line
  local vars = {}
  for _, ap in ipairs(apart) do
  for _, sp in ipairs(sproj) do
  for _, pa in ipairs(pahead) do
  for _, rc in ipairs(recomp) do
  for _, dc in ipairs(docs) do
  for _, rs in ipairs(resets) do
  for _, hs in ipairs(states) do
  for _, mp in ipairs(maps) do
  for _, fo in ipairs(fout) do
    for _, fw in ipairs(fwrite) do
      for _, sf in ipairs(sfu) do
        for _, fu in ipairs(fused) do
          for _, sc in ipairs(scans) do
            for _, p in ipairs(prefixes) do
              for _, c in ipairs(chunks) do
                local name = (ap and "apart_" or "") .. (sp and "scanproj_" or "") .. (pa and "ahead_" or "") .. (rc and "recompute_" or "") .. (dc and "docs_" or "") .. (rs and "resets_" or "") .. (hs and "states_" or "") .. (mp and "map_" or "") ..
                             (fo and "fused_output_" or "") ..
                             (fw and "fused_write_" or "") ..
                             (sf and "shared_sfu_" or "") .. (fu and "fused_" or "") ..
                             string.format("grouped_prefix%d_%s_chunk%d", p, sc, c)
                vars[#vars + 1] = {
                  name = name, chunk = c, prefix = p, fused = fu, shared_sfu = sf,
                  fused_output = fo, fused_write = fw, resets = rs or dc, states = hs, map = mp, mma = false, rows = false, apart = ap,
                  docs = dc, scan_proj = sp, proj_ahead = pa, recompute = rc,
                  materialized = (not fu) and ntoken == 0,
                  scan = sc, controller = ctl, file = file, line = line,
                }
              end
            end
          end
        end
      end
    end
  end
  end
  end
  end
  end
  end
  end
  end
  end

  return make_set(st, vars, rules, ntoken, nblock)
end

-- The decode step: one variant, named MIXER_decode, whose forward advances a
-- pool of states in place by the call's tokens (see the header).
function R.decode(o)
  if not plain(o) then fail("R.decode takes a table { mixer = m }, got %s", describe(o)) end
  check_keys(o, { mixer = true, controller = true, rules = true, mma = true, rows = true }, "R.decode")
  local st = set_mixer(o, "R.decode")
  local mma = o.mma
  if mma ~= nil and type(mma) ~= "boolean" then fail("R.decode: mma must be true or false, got %s", describe(mma)) end
  local rows = o.rows
  if rows ~= nil and type(rows) ~= "boolean" then fail("R.decode: rows must be true or false, got %s", describe(rows)) end
  local ctl = o.controller
  if ctl ~= nil and (not text(ctl) or ctl == "" or #ctl > MAXNAME) then
    fail("controller must be a non-empty line of text of at most %d characters, got %s", MAXNAME, describe(ctl))
  end
  local rules = rule_list(o.rules)
  local ntoken, nblock = proj_counts(st)
  if mma and nblock == 0 then
    fail("R.decode: mma = true runs the block-diagonal projections on tensor cores, and mixer %s has none", st.name)
  end
  if mma and st.k % 64 ~= 0 then
    fail("R.decode: mma = true takes heads of a multiple of 64 channels (a block of 4 warps owns 64 of a "
         .. "head's output channels); mixer %s has %d", st.name, st.k)
  end
  if rows and nblock > 0 then
    fail("R.decode: rows = true runs a row's whole width in one block, and the block-diagonal projections of "
         .. "mixer %s would need every head's weights in each: the plain step or mma = true runs them", st.name)
  end
  local file, line = site()
  st.used_at = st.used_at or line
  -- chunk and prefix mean nothing to the step kernel; they hold the
  -- smallest of each so that the variant reads as any other. A token
  -- stage runs in a pass of its own with its shared functions once per
  -- token, as in the scans (rows = true: inside the step's one kernel).
  local vars = { {
    name = st.name .. "_decode" .. (mma and "_mma" or rows and "_rows" or ""), mma = mma or false,
    rows = rows or false, chunk = CHUNKS[1], prefix = PREFIXES[1], fused = ntoken == 0, shared_sfu = ntoken > 0,
    fused_output = true, fused_write = true, resets = false, states = false, map = false, materialized = false,
    apart = false, scan_proj = false, proj_ahead = false, recompute = false, docs = false, scan = "decode", controller = ctl or st.controller, file = file, line = line,
  } }
  return make_set(st, vars, rules, ntoken, nblock)
end

Set.__tostring = function(s) return "variants(" .. s.mixer.name .. ", " .. #s.variants .. ")" end

return R
