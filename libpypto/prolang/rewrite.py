"""The AST step of the Pro front end: a kernel's source is parsed and its control flow
rewritten before the body is traced once (the real Pro front end parses the whole function;
pypto parses it for control flow and traces the rest, so Python's own evaluation does the
arithmetic and the calls).

    if c: A            for __pl_arm in __pl_branch(c):
    elif d: B    ->        if __pl_arm: A
    else: C                else: <the elif, rewritten the same way>
    a if c else b  ->  __pl_ifexp(c, lambda: a, lambda: b)
    a and b / or   ->  __pl_logic("and", lambda: a, lambda: b)
    not a          ->  __pl_logic("not", lambda: a)

__pl_branch yields True then False for a runtime condition (recording an `if` with both
arms) and only the arm taken for a compile-time one. Line numbers are kept, so errors and
the IR name the op file's lines. `while`, `break`, `continue`, `return` with a value,
`try` and nested function definitions are refused in a kernel body (a Pro kernel has
runtime loops through pl.range only and returns nothing).
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from ..errors import CompileError
from ..ir.core import Loc

HELPERS = ("__pl_branch", "__pl_ifexp", "__pl_logic")


class _Rewriter(ast.NodeTransformer):
    def __init__(self, file: str):
        self.file = file
        self.count = 0

    def refuse(self, node, what: str):
        raise CompileError(f"{what} is not supported in a Pro kernel body (use pl.range for "
                           f"loops, if/elif/else for branches)", Loc(self.file, node.lineno))

    def visit_While(self, node):
        self.refuse(node, "while")

    def visit_Break(self, node):
        self.refuse(node, "break")

    def visit_Continue(self, node):
        self.refuse(node, "continue")

    def visit_Try(self, node):
        self.refuse(node, "try")

    def visit_Return(self, node):
        if node.value is not None:
            self.refuse(node, "return with a value")
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        self.count += 1
        b = f"__pl_b{self.count}"
        names = sorted(_assigned(node.body + node.orelse))
        restore = [_parse(f"if {b}.had({n!r}): {n} = {b}.value_before({n!r})") for n in names]
        done = _parse(f"{b}.done(locals())")
        inner = ast.If(ast.Name("__pl_arm", ast.Load()), node.body + [done],
                       restore + (node.orelse or [ast.Pass()]) + [_parse(f"{b}.done(locals())")])
        head = ast.Assign([ast.Name(b, ast.Store())], ast.Call(
            ast.Name("__pl_branch", ast.Load()),
            [node.test, _parse("locals()").value, ast.Constant(tuple(names))], []))
        loop = ast.For(ast.Name("__pl_arm", ast.Store()), ast.Name(b, ast.Load()), [inner], [])
        merge = [_parse(f"if {b}.has({n!r}): {n} = {b}.merged({n!r})") for n in names]
        out = [head, loop] + merge
        for x in out:
            ast.copy_location(x, node)
            for sub in ast.walk(x):
                if not hasattr(sub, "lineno"):
                    ast.copy_location(sub, node)
        return out

    def visit_For(self, node):
        self.generic_visit(node)
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
                it.func.attr == "range":
            carried = _carried(node.body)
            if carried:
                raise CompileError(
                    f"{carried[0]!r} is updated from its own value in a pl.range body: the "
                    f"body is traced once, so it would be updated once, not per iteration "
                    f"(derive it from the loop variable)", Loc(self.file, node.lineno))
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        call = ast.Call(ast.Name("__pl_ifexp", ast.Load()),
                        [node.test, _thunk(node.body), _thunk(node.orelse)], [])
        return ast.copy_location(call, node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        kind = "and" if isinstance(node.op, ast.And) else "or"
        call = ast.Call(ast.Name("__pl_logic", ast.Load()),
                        [ast.Constant(kind)] + [_thunk(v) for v in node.values], [])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        call = ast.Call(ast.Name("__pl_logic", ast.Load()),
                        [ast.Constant("not"), _thunk(node.operand)], [])
        return ast.copy_location(call, node)


def _parse(src: str):
    return ast.parse(src).body[0]


def _assigned(stmts) -> set:
    """Names a list of statements assigns (the rewrite's own excluded)."""
    out = set()
    for st in stmts:
        for n in ast.walk(st):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and \
                    not n.id.startswith("__pl_"):
                out.add(n.id)
    return out


def _carried(body) -> list:
    """Names a loop body assigns after reading them first (a loop-carried Python value)."""
    first: dict = {}
    for st in body:
        for n in _in_order(st):
            if isinstance(n, ast.Name) and not n.id.startswith("__pl_"):
                first.setdefault(n.id, type(n.ctx).__name__)
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                first.setdefault(n.target.id, "Load")
    stored = _assigned(body)
    return sorted(n for n, kind in first.items() if kind == "Load" and n in stored)


def _in_order(node):
    """Nodes in evaluation order, roughly: an assignment's value before its targets."""
    if isinstance(node, ast.Assign):
        yield from _in_order(node.value)
        for t in node.targets:
            yield from _in_order(t)
        return
    if isinstance(node, ast.AugAssign):
        yield node
        yield from _in_order(node.value)
        return
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _in_order(child)


def _thunk(expr):
    lam = ast.Lambda(ast.arguments([], [], None, [], [], None, []), expr)
    return ast.copy_location(lam, expr)


def rewrite(fn, file: str, helpers: dict, extra_globals: dict, rewriter=None):
    """fn's body rewritten (see the module docstring), as a new function over the same
    globals (plus extra_globals: the TilingKey fields) and closure values. rewriter: the
    _Rewriter subclass to use (simt.py's admits a SIMT callee's final return; a vector
    function's, vf_api.py), default _Rewriter."""
    try:
        lines, first = inspect.getsourcelines(fn)
        source_file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError):
        raise CompileError(f"cannot read the source of {fn.__name__} (a Pro kernel or vector "
                           f"function must be defined in a file)") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise CompileError(f"kernel {fn.__name__} must be a plain def")
    fdef.decorator_list = []
    fdef.args = _strip_annotations(fdef.args)
    (rewriter or _Rewriter)(file).visit(fdef)
    free = list(fn.__code__.co_freevars)
    outer = ast.FunctionDef("__pl_outer", ast.arguments([], [ast.arg(n) for n in free], None,
                                                        [], [], None, []),
                            [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], [], None)
    mod = ast.Module([outer], [])
    ast.fix_missing_locations(mod)
    code = compile(mod, source_file, "exec")
    env = dict(fn.__globals__)
    env.update(extra_globals)
    env.update(helpers)
    exec(code, env)     # noqa: S102 -- the user's own kernel, rewritten
    cells = [c.cell_contents for c in (fn.__closure__ or ())]
    return env["__pl_outer"](*cells), source_file


def _strip_annotations(args: ast.arguments) -> ast.arguments:
    """Annotations were read from the original function; the copy needs none (and
    `from __future__ import annotations` strings would not resolve here anyway)."""
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        a.annotation = None
    return args
