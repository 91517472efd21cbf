#pragma once
// Where generation stands in a grammar, as llama.cpp's llama_grammar keeps it: the set of pushdown
// stacks the text so far leaves open (each topped by the character class to match next; the empty
// stack means the root is complete), plus the bytes of a UTF-8 character split across tokens.
//
// Our stacks are hash-consed linked lists (a node is a position and the node below it), so a stack is
// one integer, equal stacks are equal integers, and what a stack becomes after its top matches a
// character (llama_grammar_advance_stack's expansion) is computed once per node and remembered. A
// character step is then a class test and a list lookup per open stack. The token mask walks the
// token table's byte trie from the current state, pruning at the first refused byte, and is cached
// per state (a JSON string's inside, for one, is the same state at every character).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/token_table.h"

namespace vkllm::sampling {

// Limits against ambiguous grammars ("(.+)+" and worse), each refused with a vkllm::Error from the
// call that meets it. A stack step is a class test, an expansion or a successor. The defaults leave
// JSON schemas ten times their need (an article schema's trie walk over the gpt-2 vocabulary: 0.6M
// steps; an enum of 3000 strings: 6000 steps for a character).
struct GrammarLimits {
    size_t stacks = Grammar::max_ways;                 // open at once
    size_t step_work = Grammar::max_expansion_steps;  // stack steps for one character
    size_t call_work = 1u << 23;  // for one call: a token's bytes, or a whole mask's trie walk
};

class GrammarMatcher {
public:
    // `tokens` may be null for text-only use (accept_text, can_end); the token calls need it.
    GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTable> tokens,
                   GrammarLimits limits = {});

    void reset();  // back to the start of the root rule

    // Takes bytes (any split of UTF-8: a partial character waits for the next call). Returns false
    // and changes nothing when the grammar refuses them.
    bool accept_text(std::string_view bytes);
    bool can_end() const;       // the text so far is a whole match of the root (no partial character)
    bool can_continue() const;  // some character may still follow

    // Whether the grammar takes token `id` now: its bytes (text), can_end() (an end token), never
    // (special).
    bool allows(TokenId id);
    // A bit per token of the table, set where allows() would say yes: one walk of the trie, cached
    // per state. The reference lives until the next call.
    const std::vector<uint64_t>& allowed_tokens();
    // The same when this state's mask is cached already; null otherwise (nothing is computed).
    const std::vector<uint64_t>* cached_mask();
    // Advances over a token the grammar allows (an end token changes nothing). Throws otherwise.
    void accept(TokenId id);
    // The fewest code points that complete a match from here (0: complete now), and from the state
    // token `id` would lead to (Grammar::none_shorter where the grammar refuses it), a character's
    // bytes still to come counted one each. A reply that must end within a budget takes only tokens
    // that leave it room to close.
    uint32_t distance_to_end();
    uint32_t distance_after(TokenId id);

    size_t n_stacks() const { return stacks_.size(); }

private:
    struct Partial {  // a UTF-8 character begun but not finished
        uint32_t value = 0;
        uint8_t remaining = 0;  // continuation bytes still to come
        uint8_t length = 0;     // of the whole sequence
        bool operator==(const Partial&) const = default;
    };
    struct Node {
        uint32_t position;  // a Chars element of the grammar (or none for the empty stack)
        uint32_t parent;    // the stack below
        uint32_t char_set;
        uint32_t successors_begin = 0;
        uint32_t successors_count = uncomputed;
        uint32_t distance = uncomputed;  // the fewest code points that empty this stack
    };
    struct CachedMask {
        std::vector<uint32_t> stacks;
        Partial partial;
        std::vector<uint64_t> bits;
        uint64_t used = 0;
    };
    static constexpr uint32_t empty_stack = 0;
    static constexpr uint32_t uncomputed = UINT32_MAX;
    static constexpr size_t mask_cache_size = 32;
    static constexpr size_t compact_above_nodes = 1u << 20;

    void count_work(size_t step_work) const;  // throws past the limits
    uint32_t intern(uint32_t position, uint32_t parent);
    uint32_t after(uint32_t position, uint32_t parent);  // the stack once `position` is matched
    void expand(uint32_t stack, std::vector<uint32_t>& out);
    std::span<const uint32_t> successors(uint32_t node);
    uint32_t distance(uint32_t stack);
    uint32_t distance(std::span<const uint32_t> stacks);  // the nearest of them
    void initial_state(std::vector<uint32_t>& out);
    // The stacks after code point `c`; false when none takes it.
    bool advance(std::span<const uint32_t> from, uint32_t c, std::vector<uint32_t>& to);
    bool partial_possible(std::span<const uint32_t> stacks, const Partial& partial) const;
    // One byte from (stacks, partial): the next stacks (in `buffer`, or the same ones while a
    // character is incomplete) and partial. False when the byte is refused.
    bool step(std::span<const uint32_t> stacks, const Partial& partial, uint8_t byte, std::vector<uint32_t>& buffer,
              std::span<const uint32_t>& next, Partial& next_partial);
    // Runs `bytes` from the current state; on success the result is in walk_[bytes.size() & 1] or the current state.
    bool run(std::string_view bytes, std::span<const uint32_t>& stacks, Partial& partial);
    void walk_trie(uint32_t trie_node, std::span<const uint32_t> stacks, const Partial& partial, size_t depth,
                   std::vector<uint64_t>& bits);
    void compact();

    std::shared_ptr<const Grammar> grammar_;
    std::shared_ptr<const TokenTable> tokens_;
    GrammarLimits limits_;
    std::vector<Node> nodes_;
    // Node ids by (position, parent): open addressing with linear probing, one allocation (a node
    // map of std::unordered_map allocates per entry, which an ambiguous grammar makes millions of).
    struct NodeIndex {
        std::vector<uint64_t> keys;  // empty_key: a free slot
        std::vector<uint32_t> ids;
        size_t size = 0;
        static constexpr uint64_t empty_key = UINT64_MAX;
        uint32_t* find_or_add(uint64_t key, uint32_t id);  // the id stored, or `id` (then added)
        void clear();
    };
    NodeIndex interned_;
    std::vector<uint32_t> successor_pool_;
    std::vector<uint32_t> stacks_;  // sorted, unique
    Partial partial_;
    std::vector<CachedMask> masks_;
    uint64_t mask_clock_ = 0;
    // Scratch, kept to avoid allocating per step.
    std::vector<uint32_t> expand_todo_, visit_marks_, advance_marks_;
    uint32_t visit_stamp_ = 0, advance_stamp_ = 0;
    size_t work_ = 0;  // stack steps in the current call
    std::vector<uint32_t> walk_[2];
    std::vector<std::vector<uint32_t>> trie_levels_;
    std::vector<uint32_t> chain_;
};

}  // namespace vkllm::sampling
