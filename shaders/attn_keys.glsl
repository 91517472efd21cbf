// The keys a query sees in a single-sequence KV cache of n_cells cells (model-notes.md C.0; the
// layout in runtime/ops/attention.h). The cache holds the n_cells positions up to the batch's last
// one, last_pos (its last query's): key index i (0 .. n_cells - 1) is position base + i, with
// base = max(0, last_pos - n_cells + 1), stored in cell (base + i) mod n_cells. A full cache
// (last_pos < n_cells) has base 0 and key i in cell i; a circular sliding-window cache that has
// wrapped costs the kernels, which walk key indices, one compare per key.
struct CacheKeys {
    int base;        // the position of key index 0
    uint base_cell;  // and its cell
};

CacheKeys cache_keys(int last_pos, uint n_cells) {
    const int base = max(0, last_pos - int(n_cells) + 1);
    return CacheKeys(base, uint(base) % n_cells);
}

uint key_cell(CacheKeys keys, int key, uint n_cells) {
    const uint cell = keys.base_cell + uint(key);
    return cell >= n_cells ? cell - n_cells : cell;
}

// Key indices first .. last (empty when last < first) a query at pos sees: positions pos - n_swa + 1
// (with a sliding window) through pos, or through last_pos when not causal, of those held.
ivec2 visible_keys(CacheKeys keys, int pos, int last_pos, uint n_swa, uint n_cells, bool causal) {
    const int held_last = keys.base + int(n_cells) - 1;
    const int last = causal ? min(pos, held_last) : last_pos;
    const int first = n_swa != 0u ? max(keys.base, pos - int(n_swa) + 1) : keys.base;
    return ivec2(first, last) - keys.base;
}
