"""The simulated prefix cache: a radix tree over prompt token ids, as SGLang's RadixCache.

What it copies from SGLang 0.5.23 (python/sglang/srt/mem_cache/radix_cache.py, page_size 1):
* `match_prefix` walks the tree and splits an edge where the key diverges; a request matches
  at most `input_len - 1` tokens, so the last token is always computed
  (managers/schedule_batch.py `_compute_max_prefix_len`).
* A running request locks its path (`inc_lock_ref`/`dec_lock_ref`): locked tokens are
  "protected" and count as used; unlocked ones are "evictable" and count as free in the
  `token usage` of the log (managers/scheduler_components/pool_stats_observer.py
  `_get_token_info`: used = total - available - evictable).
* After its prefill a request's prompt goes into the tree (`checkpoint_kv_cache`), when it
  finishes its prompt and output do (`release_kv_cache(checkpoint=True)`), both called from
  managers/scheduler_components/batch_result_processor.py and mem_cache/common.py.
* `evict` frees least-recently-used unlocked leaves until the pool has room.
* /flush_cache empties it (`reset`).
Edges are `array('q')`, 8 bytes a token, so a full pool costs megabytes, not a node a token.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Sequence
from itertools import count

_clock = count()


class Node:
    __slots__ = ("children", "key", "last_access", "lock", "parent")

    def __init__(self, key: array[int], parent: Node | None) -> None:
        self.key = key
        self.parent = parent
        self.children: dict[int, Node] = {}
        self.lock = 0
        self.last_access = next(_clock)


def _common(edge: array[int], key: Sequence[int], start: int) -> int:
    """How many leading tokens of `edge` equal key[start:] (slice compares, not a loop)."""
    n = min(len(edge), len(key) - start)
    if edge[:n] == array("q", key[start:start + n]):
        return n
    lo, hi = 0, n  # edge[:lo] matches, edge[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if edge[:mid] == array("q", key[start:start + mid]):
            lo = mid
        else:
            hi = mid
    return lo


class RadixCache:
    """Token-id prefixes of past requests. `protected` tokens are locked by running requests;
    `evictable` ones can be freed when the pool needs room."""

    def __init__(self) -> None:
        self.root = Node(array("q"), None)
        self.root.lock = 1  # never evicted
        self.evictable = 0
        self.protected = 0
        self._leaves: OrderedDict[Node, None] = OrderedDict()  # unlocked leaves, LRU first

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    @property
    def size(self) -> int:
        return self.evictable + self.protected

    def match(self, key: Sequence[int]) -> tuple[int, Node]:
        """Longest cached prefix of `key`: (its length, the node where it ends)."""
        node, pos = self.root, 0
        while pos < len(key):
            child = node.children.get(key[pos])
            if child is None:
                break
            n = _common(child.key, key, pos)
            child.last_access = next(_clock)
            if n < len(child.key):
                child = self._split(child, n)
            node, pos = child, pos + n
            self._touch(node)
        return pos, node

    def insert(self, key: Sequence[int]) -> tuple[int, Node]:
        """Add `key`; returns (tokens newly stored, its last node). New tokens are unlocked."""
        matched, node = self.match(key)
        if matched == len(key):
            return 0, node
        leaf = Node(array("q", key[matched:]), node)
        node.children[key[matched]] = leaf
        self._leaves.pop(node, None)  # no longer a leaf
        self._leaves[leaf] = None
        self.evictable += len(leaf.key)
        return len(leaf.key), leaf

    def lock(self, node: Node) -> int:
        """Lock `node` and its ancestors; returns the tokens that went evictable -> protected."""
        moved = 0
        while node is not self.root:
            if node.lock == 0:
                moved += len(node.key)
                self._leaves.pop(node, None)
            node.lock += 1
            node = node.parent  # type: ignore[assignment]
        self.evictable -= moved
        self.protected += moved
        return moved

    def unlock(self, node: Node) -> int:
        """Undo `lock`; returns the tokens that went protected -> evictable."""
        moved = 0
        while node is not self.root:
            node.lock -= 1
            if node.lock == 0:
                moved += len(node.key)
                if not node.children:
                    self._leaves[node] = None
            node = node.parent  # type: ignore[assignment]
        self.evictable += moved
        self.protected -= moved
        return moved

    def evict(self, tokens: int) -> int:
        """Free at least `tokens` evictable tokens, least recently used leaves first."""
        freed = 0
        while freed < tokens and self._leaves:
            leaf, _ = self._leaves.popitem(last=False)
            parent = leaf.parent
            assert parent is not None
            del parent.children[leaf.key[0]]
            freed += len(leaf.key)
            if parent is not self.root and not parent.children and parent.lock == 0:
                self._leaves[parent] = None
        self.evictable -= freed
        return freed

    def _touch(self, node: Node) -> None:
        if node in self._leaves:
            self._leaves.move_to_end(node)

    def _split(self, child: Node, n: int) -> Node:
        """Cut `child`'s edge after `n` tokens; returns the new upper node."""
        parent = child.parent
        assert parent is not None
        upper = Node(child.key[:n], parent)
        upper.lock = child.lock
        upper.last_access = child.last_access
        parent.children[child.key[0]] = upper
        child.key = child.key[n:]
        child.parent = upper
        upper.children[child.key[0]] = child
        return upper
