"""Option C grouping of a `CallGraph`: `for N` stacks and `parfor N` repeated calls, as a small tree.

The dynamic call tree of one forward has thousands of module nodes; the grouped graph folds it to a
few dozen by two rules, both detected from the graph itself (addresses, classes, structure), never from
a list of model-specific names:

`for N` (a stack)
    Sibling modules called from the same parent whose addresses differ only in one numeric component
    (`sam_model.blocks.0 .. 11`), of the same class and the same *shape*, become one node
    `Block @ model.sam_model.blocks.[0-11] for 12`: one stack of one class is one node, because that is
    the loop the code runs. Its members may differ in constructor parameters only (SAM's 8 windowed
    and 4 global-attention blocks, whose relative-position tables are also larger); those are the
    node's *variants* (`window_size=14 ×8`, `window_size=0 ×4`), each with its own members and, once
    costs are attached (`callgraph.node_costs`), its own costs. Members whose child structure differs
    (dense decoder layer 0 vs MoE layers 1-11: different child classes) are split into one node per
    shape, each keeping its exact index list.

`parfor N`
    A node whose every member is called N times (an integer > 1) per call of its parent: SAM, CLIP and
    the projector run on the crops and on the global view (`parfor 2`), a block called in a Python loop.
    When the calls per parent call are not a whole number, uniform across members, the node carries
    its call counts (`calls k`) instead.

Shape (what must be equal for two siblings to share a node) is the pair
  * static: class name and, recursively, every static child (`module_children`) by child name;
  * call structure: the called children grouped the same way (relative template, class, shape,
    calls per parent call, and the number of members — except for sparse families, below).
A *variant* (the members of a node that are alike in everything) adds, recursively over the static
subtree, the constructor parameters (index-like keys such as `layer_idx` ignored) and the number of
parameters each module holds directly.
A family is *sparse* when only some of the static candidates were called (MoE experts that received
tokens): which members are called depends on values, so the members of a sparse family are grouped
whatever their call counts, and the parent's structure records "sparse of K" instead of the count.
Sparse nodes and everything under them are flagged `value_dependent`.

Nested stacks merge naturally: the children of a group are the corresponding children of all its
members (`model.layers.[1-11].mlp.experts.[...]`). Sums per node: parameters over the static subtree
of every member, calls from the parent, ops (direct and over the static subtree), output activation
bytes; `callgraph.node_costs` attaches the costs (FLOPs, bytes, times) per node and per variant.

The groups can be checked against the runtime log of the same forward: the model's package hands
`group_callgraph` its `RuntimeCheck`s (`callgraph.checks`; DeepSeek-OCR's are in `dsocr.checks`). The
grouping itself knows no model.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Sequence

from llm_perf_opt.callgraph.checks import RuntimeCheck, run_checks
from llm_perf_opt.callgraph.grouped import (
    GroupEdge,
    GroupedGraph,
    GroupNode,
    GroupVariant,
    compact_ranges,
)
from llm_perf_opt.callgraph.schema import ROOT, CallGraph
from llm_perf_opt.errors import ArtifactError

# Constructor parameters that name a position in a stack rather than a shape: ignored in signatures.
_INDEX_KEY = re.compile(r"(^|_)(idx|index|layer_id|layer_number|layer_num|block_id|block_idx|layer_idx)$")
_NUM = re.compile(r"^\d+$")


# ---------------------------------------------------------------------------------------------- helpers
def _components(address: str) -> list[str]:
    return address.split(".") if address else []


def _relative(child: str, parent: str) -> str:
    """The child's address relative to its caller; a module called from outside its static ancestor
    keeps its absolute address, marked with a leading '/'."""
    if parent == ROOT:
        return child
    if child.startswith(parent + "."):
        return child[len(parent) + 1 :]
    return "/" + child


def _hash(obj: Any) -> str:
    return hashlib.sha1(repr(obj).encode()).hexdigest()[:12]


def _normalise_params(params: Mapping[str, Any] | None) -> tuple:
    if not params:
        return ()
    return tuple(sorted((str(k), repr(v)) for k, v in params.items() if not _INDEX_KEY.search(str(k))))


def _param_name(key: str) -> str:
    """`rel.path:name` -> "rel.path.name" ("name" at the top)."""
    rel, _, name = key.partition(":")
    return f"{rel}.{name}" if rel else name


def _short_repr(value: Any, limit: int = 40) -> Any:
    """A parameter value for a label: numbers, booleans and None as themselves, anything else as text
    of at most `limit` characters."""
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_meta(meta: Any) -> list[Any]:
    if isinstance(meta, Mapping):
        first = meta.get("first")
        if first is None:
            return []
        return list(first) if isinstance(first, (list, tuple)) else [first]
    if isinstance(meta, (list, tuple)):
        return list(meta)
    return []


def pattern_of(members: Sequence[str]) -> tuple[str, list[list[int]]]:
    """The address pattern of members with the same number of components: literal where they agree,
    `[ranges]` where a numeric component varies, `{a,b}` where a name varies."""
    if not members:
        return "", []
    if len(members) == 1:
        return (members[0] if members[0] != ROOT else "(root)"), []
    split = [_components(m) for m in members]
    if len({len(s) for s in split}) != 1:  # different depths (a module shared by several callers)
        return "{" + ",".join(sorted(set(members))) + "}", []
    parts, indices = [], []
    for pos in range(len(split[0])):
        values = [s[pos] for s in split]
        distinct = sorted(set(values), key=lambda v: (not _NUM.match(v), int(v) if _NUM.match(v) else 0, v))
        if len(distinct) == 1:
            parts.append(distinct[0])
        elif all(_NUM.match(v) for v in distinct):
            ints = [int(v) for v in distinct]
            indices.append(ints)
            parts.append(f"[{compact_ranges(ints)}]")
        else:
            parts.append("{" + ",".join(distinct) + "}")
    return ".".join(parts), indices


# ---------------------------------------------------------------------------------------------- grouper
@dataclass
class _Subgroup:
    template: str
    class_name: str
    sig: str
    calls_key: Fraction | None  # calls per parent call when dense; None for sparse families
    sparse: bool
    static_n: int | None
    members: list[tuple[str, int]]  # (address, edge calls from the parent)


class _Grouper:
    def __init__(self, cg: CallGraph) -> None:
        self.cg = cg
        self.calls = {a: int(n) for a, n in cg.call_counts.items() if n and n > 0}
        self.children: dict[str, list[tuple[str, int]]] = {}
        for parent, kids in cg.edges.items():
            lst = []
            for child, n in kids.items():
                if n and n > 0 and child != parent:
                    lst.append((child, int(n)))
                    self.calls.setdefault(child, int(n))
            self.children[parent] = lst
            if lst:
                self.calls.setdefault(parent, 1)
        self.calls.setdefault(ROOT, 1)
        # Called modules the root does not reach (a capture that missed the root's edges, a cycle) hang
        # under the root, shallowest address first.
        reached = self._reachable(ROOT)
        for a in sorted(self.calls, key=lambda x: (x.count("."), x)):
            if a not in reached:
                self.children.setdefault(ROOT, []).append((a, self.calls[a]))
                reached |= self._reachable(a)
        self.static_children = {a: list(v) for a, v in cg.module_children.items()}
        self.types = dict(cg.module_types)
        self.subtree_params = self._subtree_sums(cg.param_counts)
        self.subtree_ops = self._subtree_sums(cg.op_call_counts)
        self._static_sig: dict[str, str] = {}
        self._static_full: dict[str, str] = {}
        self._sig: dict[str, str] = {}
        self._families: dict[str, list[_Subgroup]] = {}
        self._in_progress: set[str] = set()

    def _reachable(self, start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for c, _ in self.children.get(todo.pop(), []):
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        return seen

    # ---------------------------------------------------------------- sums
    @staticmethod
    def _subtree_sums(values: Mapping[str, int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for addr, v in values.items():
            if not v:
                continue
            comps = _components(addr)
            for k in range(len(comps) + 1):
                anc = ".".join(comps[:k])
                out[anc] = out.get(anc, 0) + int(v)
        return out

    def class_of(self, addr: str) -> str:
        return self.types.get(addr, "?")

    # ---------------------------------------------------------------- signatures
    def static_sig(self, addr: str, with_params: bool = False) -> str:
        """The static subtree's classes by child name; `with_params`: also the constructor parameters and
        the parameters held directly, recursively (what tells variants apart)."""
        cache = self._static_full if with_params else self._static_sig
        if addr in cache:
            return cache[addr]
        kids = self.static_children.get(addr, [])
        own: tuple = (self.class_of(addr),)
        if with_params:
            own += (
                _normalise_params(self.cg.constructor_params.get(addr)),
                int(self.cg.param_counts.get(addr, 0) or 0),
            )
        sig = _hash((own, tuple((_relative(c, addr), self.static_sig(c, with_params)) for c in kids if c != addr)))
        cache[addr] = sig
        return sig

    def variant_sig(self, addr: str) -> str:
        """Shape + constructor parameters and direct parameter counts over the static subtree."""
        return _hash((self.sig(addr), self.static_sig(addr, with_params=True)))

    def flat_params(self, addr: str) -> dict[str, Any]:
        """Every constructor parameter (index-like keys left out) and direct parameter count of the static
        subtree, keyed by `relative.path:name` ("" for `addr` itself)."""
        out: dict[str, Any] = {}
        todo = [addr]
        while todo:
            a = todo.pop(0)
            rel = "" if a == addr else _relative(a, addr)
            for k, v in (self.cg.constructor_params.get(a) or {}).items():
                if _INDEX_KEY.search(str(k)):
                    continue
                if isinstance(v, Mapping):  # e.g. param_shapes: one key per entry
                    out.update({f"{rel}:{k2}": v2 for k2, v2 in v.items()})
                else:
                    out[f"{rel}:{k}"] = v
            out[f"{rel}:params"] = int(self.cg.param_counts.get(a, 0) or 0)
            todo.extend(c for c in self.static_children.get(a, []) if c != a)
        return out

    def sig(self, addr: str) -> str:
        """Shape: static structure + call structure (constructor parameters left out)."""
        if addr in self._sig:
            return self._sig[addr]
        if addr in self._in_progress:  # a recursive call chain: cut it
            return self.static_sig(addr)
        self._in_progress.add(addr)
        calls = sorted({repr(self._call_shape(sg)) for sg in self.families(addr)})
        self._in_progress.discard(addr)
        sig = _hash((self.static_sig(addr), tuple(calls)))
        self._sig[addr] = sig
        return sig

    @staticmethod
    def _call_shape(sg: _Subgroup) -> tuple:
        """What a parent's structure records of one subgroup of its called children. A stack family
        with known static candidates records "a stack of K" whatever subset was called and how often,
        so MoE layers that routed to different experts (all 64 in one layer, 50 in the next) keep one
        structure; a single child records its calls per parent call."""
        if "*" in sg.template:
            if sg.static_n is not None:
                return (sg.template, sg.class_name, sg.sig, "stack of", sg.static_n)
            return (sg.template, sg.class_name, sg.sig, sg.calls_key, len(sg.members))
        return (sg.template, sg.class_name, sg.sig, sg.calls_key)

    # ---------------------------------------------------------------- families
    def _static_candidates(self, parent_addr: str, child_addr: str, pos: int) -> int | None:
        """How many modules exist statically at `child_addr` with component `pos` set to any number."""
        comps = _components(child_addr)
        container = ".".join(comps[:pos])
        rest = comps[pos + 1 :]
        kids = self.static_children.get(container)
        if kids is None:
            return None
        n = 0
        for k in kids:
            last = k.rpartition(".")[2] if container else k
            if not _NUM.match(last):
                continue
            full = ".".join([k] + rest) if rest else k
            if full in self.types and self.class_of(full) == self.class_of(child_addr):
                n += 1
        return n or None

    def families(self, addr: str) -> list[_Subgroup]:
        """The called children of `addr`, in families (same class, addresses differing in one numeric
        component), each split into subgroups of equal structure (and equal calls when dense)."""
        if addr in self._families:
            return self._families[addr]
        kids = self.children.get(addr, [])
        my_calls = max(self.calls.get(addr, 1), 1)
        rels = [(c, n, _relative(c, addr)) for c, n in kids]
        # candidate keys: (position in the relative address, template, class)
        cand: dict[tuple, list[int]] = OrderedDict()
        for i, (c, _, rel) in enumerate(rels):
            comps = _components(rel.lstrip("/"))
            for pos, comp in enumerate(comps):
                if _NUM.match(comp):
                    templ = comps[:pos] + ["*"] + comps[pos + 1 :]
                    key = (pos, ("/" if rel.startswith("/") else "") + ".".join(templ), self.class_of(c))
                    cand.setdefault(key, []).append(i)
        assigned: dict[int, tuple] = {}
        order = sorted(cand.items(), key=lambda kv: (-len(kv[1]), -kv[0][0]))
        fams: dict[tuple, list[int]] = {}
        for key, idxs in order:
            free = [i for i in idxs if i not in assigned]
            if len(free) < 2:
                continue
            for i in free:
                assigned[i] = key
            fams[key] = free
        # families in order of first call; singletons keep their literal relative address
        seen: set[tuple] = set()
        grouped: list[tuple[tuple | None, list[int]]] = []
        for i in range(len(rels)):
            key = assigned.get(i)
            if key is None:
                grouped.append((None, [i]))
            elif key not in seen:
                seen.add(key)
                grouped.append((key, fams[key]))
        out: list[_Subgroup] = []
        for key, idxs in grouped:
            if key is None:
                c, n, rel = rels[idxs[0]]
                out.append(_Subgroup(rel, self.class_of(c), self.sig(c), Fraction(n, my_calls), False, None, [(c, n)]))
                continue
            pos, templ, cls = key
            abs_pos = pos + (0 if addr == ROOT or rels[idxs[0]][2].startswith("/") else len(_components(addr)))
            static_n = self._static_candidates(addr, rels[idxs[0]][0], abs_pos)
            sparse = static_n is not None and len(idxs) < static_n
            subs: dict[tuple, _Subgroup] = OrderedDict()
            for i in idxs:
                c, n, _ = rels[i]
                ck = None if sparse else Fraction(n, my_calls)
                s = self.sig(c)
                sg = subs.get((s, ck))
                if sg is None:
                    sg = subs[(s, ck)] = _Subgroup(templ, cls, s, ck, sparse, static_n, [])
                sg.members.append((c, n))
            out.extend(subs.values())
        self._families[addr] = out
        return out

    def _common_params(self, members: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        dicts = [self.cg.constructor_params.get(m) or {} for m in members]
        keys = list(OrderedDict.fromkeys(k for d in dicts for k in d))
        common, varying = {}, []
        for k in keys:
            values = [repr(d.get(k, "<absent>")) for d in dicts]
            if len(set(values)) == 1:
                common[k] = dicts[0][k]
            else:
                varying.append(k)
        return common, varying

    # ---------------------------------------------------------------- tree
    def build(self, max_nodes: int = 100_000) -> GroupedGraph:
        """The grouped tree, from the root down: each node is made, measured, given its calls from the
        parent, then its children are the merged subgroups of its members' called children."""
        self._nodes: list[GroupNode] = []
        self._edges: list[GroupEdge] = []
        self._max_nodes = max_nodes
        self._make([ROOT], None, "", None, frozenset())
        return GroupedGraph(nodes=self._nodes, edges=self._edges, root=self._nodes[0].id, model_name=self.cg.model_name)

    def _make(
        self,
        members: list[str],
        parent: GroupNode | None,
        template: str,
        entries: list[tuple[str, _Subgroup]] | None,
        path: frozenset[str],
    ) -> GroupNode:
        node = self._new_node(members, parent, template)
        distinct = list(OrderedDict.fromkeys(members))
        self._measure(node, distinct)
        if entries is None:
            self._root_calls(node)
        else:
            assert parent is not None
            self._calls_from_parent(node, parent, entries)
            parent.children.append(node.id)
            self._edges.append(GroupEdge(parent.id, node.id, node.calls, node.parfor))
        for child_template, part in self._child_parts(distinct, path):
            child_members = list(OrderedDict.fromkeys(c for _, sg in part for c, _ in sg.members))
            self._make(child_members, node, child_template, part, path | frozenset(distinct))
        return node

    def _new_node(self, members: list[str], parent: GroupNode | None, template: str) -> GroupNode:
        if len(self._nodes) >= self._max_nodes:
            raise ArtifactError(f"grouped graph exceeds {self._max_nodes} nodes: the call graph is inconsistent")
        pattern, indices = pattern_of(members)
        node = GroupNode(
            id=f"n{len(self._nodes)}",
            class_name=self.class_of(members[0]),
            pattern=pattern,
            members=list(members),
            parent=parent.id if parent else None,
            depth=(parent.depth + 1) if parent else 0,
            template=template,
            indices=indices,
        )
        self._nodes.append(node)
        return node

    def _measure(self, node: GroupNode, distinct: list[str]) -> None:
        """Sums over the members (params, ops, activation bytes), shared constructor params, the first
        member's I/O shapes and the structure signature."""
        first = node.members[0]
        node.params = sum(self.subtree_params.get(m, 0) for m in distinct)
        node.ops_self = sum(int(self.cg.op_call_counts.get(m, 0) or 0) for m in distinct)
        node.ops_total = sum(self.subtree_ops.get(m, 0) for m in distinct)
        node.activation_bytes = sum(int(self.cg.activation_bytes.get(m, 0) or 0) for m in distinct)
        node.constructor_params, node.varying_params = self._common_params(distinct)
        node.input_shapes = _first_meta(self.cg.input_metadata.get(first))
        node.output_shapes = _first_meta(self.cg.output_metadata.get(first))
        node.signature = self.sig(first)
        node.variants = self._variants(distinct)

    def _variants(self, distinct: list[str]) -> list[GroupVariant]:
        """The members split by `variant_sig`, when they differ; each labelled by the shallowest
        parameters that tell the variants apart (at most two)."""
        by_sig: dict[str, list[str]] = OrderedDict()
        for m in distinct:
            by_sig.setdefault(self.variant_sig(m), []).append(m)
        if len(by_sig) < 2:
            return []
        flat = {sig: self.flat_params(members[0]) for sig, members in by_sig.items()}
        keys = list(OrderedDict.fromkeys(k for f in flat.values() for k in f))
        differ = [k for k in keys if len({repr(f.get(k, "<absent>")) for f in flat.values()}) > 1]
        depth = lambda k: -1 if k.startswith(":") else k.partition(":")[0].count(".")  # noqa: E731
        named = [k for k in differ if not k.endswith(":params")] or differ  # a parameter count says least
        shallowest = min(depth(k) for k in named)
        label_keys = [k for k in named if depth(k) == shallowest][:2]
        out = []
        for sig, members in by_sig.items():
            differs = {_param_name(k): _short_repr(flat[sig].get(k, "<absent>")) for k in label_keys}
            out.append(
                GroupVariant(
                    label=", ".join(f"{k}={v}" for k, v in differs.items()),
                    members=members,
                    differs=differs,
                    params=sum(self.subtree_params.get(m, 0) for m in members),
                    signature=sig,
                )
            )
        return out

    def _root_calls(self, node: GroupNode) -> None:
        node.calls = node.parent_calls = self.calls.get(node.members[0], 1)
        node.member_calls = [node.calls]
        node.parfor = 1
        node.calls_per_parent_call = [1.0, 1.0]

    def _calls_from_parent(self, node: GroupNode, parent: GroupNode, entries: list[tuple[str, _Subgroup]]) -> None:
        """`for N` (members per parent member), sparsity, calls, and `parfor` when every member is called
        the same whole number of times per parent call."""
        sg0 = entries[0][1]
        per_parent_counts: dict[str, int] = OrderedDict()
        for p, sg in entries:
            per_parent_counts[p] = per_parent_counts.get(p, 0) + len(sg.members)
        per_parent = list(per_parent_counts.values())
        node.for_n, node.for_min = max(per_parent), min(per_parent)
        node.static_n = sg0.static_n
        node.sparse = any(sg.sparse for _, sg in entries)
        node.value_dependent = node.sparse or parent.value_dependent
        node.calls = sum(n for _, sg in entries for _, n in sg.members)
        per_member: dict[str, int] = OrderedDict((m, 0) for m in node.members)
        for _, sg in entries:
            for c, n in sg.members:
                per_member[c] += n
        node.member_calls = list(per_member.values())
        parents = list(OrderedDict.fromkeys(p for p, _ in entries))
        node.parent_calls = sum(max(self.calls.get(p, 1), 1) for p in parents)
        ratios = [Fraction(n, max(self.calls.get(p, 1), 1)) for p, sg in entries for _, n in sg.members]
        node.calls_per_parent_call = [float(min(ratios)), float(max(ratios))]
        uniform = len(set(ratios)) == 1 and ratios[0].denominator == 1
        node.parfor = int(ratios[0]) if uniform else None

    def _child_parts(self, distinct: list[str], path: frozenset[str]) -> list[tuple[str, list[tuple[str, _Subgroup]]]]:
        """The corresponding subgroups of every member, merged by (template, class, structure); when every
        parent called the whole family, also split by calls per parent call; when some parent called
        only a subset (routing), not. Members on the current path are not entered again (recursion)."""
        merged: dict[tuple, list[tuple[str, _Subgroup]]] = OrderedDict()
        for m in distinct:
            if m in path:
                continue
            for sg in self.families(m):
                merged.setdefault((sg.template, sg.class_name, sg.sig), []).append((m, sg))
        out: list[tuple[str, list[tuple[str, _Subgroup]]]] = []
        for key, ents in merged.items():
            if any(sg.sparse for _, sg in ents):
                out.append((key[0], ents))
                continue
            by_calls: dict[Any, list[tuple[str, _Subgroup]]] = OrderedDict()
            for ent in ents:
                by_calls.setdefault(ent[1].calls_key, []).append(ent)
            out.extend((key[0], part) for part in by_calls.values())
        return out


# ---------------------------------------------------------------------------------------------- public
def group_callgraph(
    cg: CallGraph,
    runtime_log: Sequence[Mapping[str, Any]] | None = None,
    checks: Sequence[RuntimeCheck] = (),
) -> GroupedGraph:
    """Group a call graph (Option C) and run the model's runtime `checks` against the runtime log.

    `runtime_log` defaults to the call graph's own `runtime_log`."""
    grouped = _Grouper(cg).build()
    grouped.source = {
        "modules": len(cg.module_types),
        "modules_called": sum(1 for a, n in cg.call_counts.items() if n and n > 0),
        "module_calls": cg.total_module_calls(),
        "ops": cg.total_ops(),
    }
    events = list(cg.runtime_log if runtime_log is None else runtime_log)
    grouped.checks = run_checks(grouped, events, checks, module_types=cg.module_types)
    return grouped


def summarize_stacks(grouped: GroupedGraph) -> list[dict[str, Any]]:
    """One row per `for N` node (and per split-off member of a stack family)."""
    rows = []
    for n in grouped.nodes:
        if n.is_stack or "*" in n.template:
            rows.append(
                {
                    "id": n.id,
                    "class_name": n.class_name,
                    "pattern": n.pattern,
                    "for_n": n.for_n,
                    "for_min": n.for_min,
                    "static_n": n.static_n,
                    "sparse": n.sparse,
                    "indices": n.indices,
                    "params": n.params,
                    "calls": n.calls,
                    "parfor": n.parfor,
                }
            )
    return rows


def summarize_parfor_edges(grouped: GroupedGraph) -> list[dict[str, Any]]:
    """One row per edge whose child is called more than once per parent call."""
    idx = grouped._index()
    rows = []
    for e in grouped.edges:
        child = idx[e.child]
        if (e.parfor or 0) > 1 or (e.parfor is None and child.calls_per_parent_call[-1] > 1):
            rows.append(
                {
                    "parent": idx[e.parent].pattern,
                    "child": child.pattern,
                    "class_name": child.class_name,
                    "parfor": e.parfor,
                    "calls": e.calls,
                    "parent_calls": child.parent_calls,
                    "calls_per_parent_call": child.calls_per_parent_call,
                }
            )
    return rows
