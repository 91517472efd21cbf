#include "sampling/grammar_matcher.h"

#include <algorithm>
#include <bit>

#include "core/error.h"
#include "sampling/utf8.h"

namespace vkllm::sampling {
namespace {

// A grammar whose ambiguity a state shows only while generating (parse-time checks see one expansion).
template <class... Args>
[[noreturn]] void too_ambiguous(fmt::format_string<Args...> what, Args&&... args) {
    throw ConstraintError("the grammar is too ambiguous: " + fmt::format(what, std::forward<Args>(args)...));
}

void sort_unique(std::vector<uint32_t>& ids) {
    std::ranges::sort(ids);
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTable> tokens,
                               GrammarLimits limits)
    : grammar_(std::move(grammar)), tokens_(std::move(tokens)), limits_(limits) {
    if (!grammar_) fail("grammar matcher: no grammar given");
    nodes_.push_back({.position = UINT32_MAX, .parent = empty_stack, .char_set = 0});
    if (tokens_) trie_levels_.resize(tokens_->max_piece_bytes() + 1);
    reset();
}

void GrammarMatcher::reset() {
    initial_state(stacks_);
    partial_ = {};
}

void GrammarMatcher::count_work(size_t step_work) const {
    if (step_work > limits_.step_work)
        too_ambiguous("one character takes more than {} stack steps", limits_.step_work);
    if (work_ > limits_.call_work)
        too_ambiguous("one token or mask takes more than {} stack steps", limits_.call_work);
}

uint32_t* GrammarMatcher::NodeIndex::find_or_add(uint64_t key, uint32_t id) {
    if (2 * (size + 1) > keys.size()) {  // grow at half full
        std::vector<uint64_t> old_keys(std::max<size_t>(1024, 2 * keys.size()), empty_key);
        std::vector<uint32_t> old_ids(old_keys.size());
        old_keys.swap(keys);
        old_ids.swap(ids);
        size = 0;
        for (size_t i = 0; i < old_keys.size(); ++i)
            if (old_keys[i] != empty_key) find_or_add(old_keys[i], old_ids[i]);
    }
    const size_t mask = keys.size() - 1;
    for (size_t slot = size_t(std::rotl(key * 0x9E3779B97F4A7C15ull, 32)) & mask;; slot = (slot + 1) & mask) {
        if (keys[slot] == key) return &ids[slot];
        if (keys[slot] == empty_key) {
            keys[slot] = key;
            ids[slot] = id;
            ++size;
            return &ids[slot];
        }
    }
}

void GrammarMatcher::NodeIndex::clear() {
    keys.clear();
    ids.clear();
    size = 0;
}

uint32_t GrammarMatcher::intern(uint32_t position, uint32_t parent) {
    const uint32_t id = *interned_.find_or_add(uint64_t(position) << 32 | parent, uint32_t(nodes_.size()));
    if (id == nodes_.size()) {
        const Grammar::Element& element = grammar_->element(position);
        nodes_.push_back({.position = position, .parent = parent,
                          .char_set = element.kind == Grammar::Kind::Chars ? element.value : 0});
    }
    return id;
}

uint32_t GrammarMatcher::after(uint32_t position, uint32_t parent) {
    return grammar_->element(position + 1).kind == Grammar::Kind::End ? parent : intern(position + 1, parent);
}

// llama_grammar_advance_stack: a stack topped by a rule becomes one stack per alternative of it (the
// alternative's first element over the rest of the caller's sequence) until every top is a character
// class or the stack is empty. Left recursion was refused at parse time, so this ends.
void GrammarMatcher::expand(uint32_t stack, std::vector<uint32_t>& out) {
    if (++visit_stamp_ == 0) {
        std::ranges::fill(visit_marks_, 0);
        visit_stamp_ = 1;
    }
    expand_todo_.assign(1, stack);
    for (size_t visited = 0; !expand_todo_.empty(); ++visited, ++work_) {
        count_work(visited);
        const uint32_t id = expand_todo_.back();
        expand_todo_.pop_back();
        if (visit_marks_.size() < nodes_.size()) visit_marks_.resize(nodes_.size() * 2, 0);
        if (visit_marks_[id] == visit_stamp_) continue;
        visit_marks_[id] = visit_stamp_;
        if (id == empty_stack) {
            out.push_back(id);
            continue;
        }
        const Node node = nodes_[id];  // a copy: intern() below may grow nodes_
        const Grammar::Element& top = grammar_->element(node.position);
        if (top.kind == Grammar::Kind::Chars) {
            out.push_back(id);
            continue;
        }
        const uint32_t rest = after(node.position, node.parent);
        for (uint32_t start : grammar_->alternatives(top.value))
            expand_todo_.push_back(grammar_->element(start).kind == Grammar::Kind::End ? rest : intern(start, rest));
    }
    if (out.size() > limits_.stacks) too_ambiguous("more than {} ways to go on at once", limits_.stacks);
}

std::span<const uint32_t> GrammarMatcher::successors(uint32_t id) {
    if (nodes_[id].successors_count == uncomputed) {
        std::vector<uint32_t> next;
        expand(after(nodes_[id].position, nodes_[id].parent), next);
        sort_unique(next);
        nodes_[id].successors_begin = uint32_t(successor_pool_.size());
        nodes_[id].successors_count = uint32_t(next.size());
        successor_pool_.insert(successor_pool_.end(), next.begin(), next.end());
    }
    return std::span(successor_pool_).subspan(nodes_[id].successors_begin, nodes_[id].successors_count);
}

void GrammarMatcher::initial_state(std::vector<uint32_t>& out) {
    out.clear();
    for (uint32_t start : grammar_->alternatives(grammar_->root()))
        expand(grammar_->element(start).kind == Grammar::Kind::End ? empty_stack : intern(start, empty_stack), out);
    sort_unique(out);
}

bool GrammarMatcher::advance(std::span<const uint32_t> from, uint32_t c, std::vector<uint32_t>& to) {
    to.clear();
    if (++advance_stamp_ == 0) {
        std::ranges::fill(advance_marks_, 0);
        advance_stamp_ = 1;
    }
    size_t step_work = from.size(), matched = 0;  // a class test per stack, then its successors
    work_ += from.size();
    for (uint32_t id : from) {
        if (id == empty_stack || !grammar_->char_set(nodes_[id].char_set).contains(c)) continue;
        const std::span<const uint32_t> next = successors(id);
        step_work += next.size();
        work_ += next.size();
        count_work(step_work);
        if (advance_marks_.size() < nodes_.size()) advance_marks_.resize(nodes_.size() * 2, 0);
        for (uint32_t n : next)
            if (advance_marks_[n] != advance_stamp_) {
                advance_marks_[n] = advance_stamp_;
                to.push_back(n);
            }
        ++matched;
    }
    if (matched > 1) std::ranges::sort(to);  // sorted states compare equal for the mask cache
    if (to.size() > limits_.stacks) too_ambiguous("more than {} ways to go on at once", limits_.stacks);
    return !to.empty();
}

// llama_grammar_match_partial_char: could some completion of the partial character match a top?
bool GrammarMatcher::partial_possible(std::span<const uint32_t> stacks, const Partial& partial) const {
    const uint32_t shift = 6u * partial.remaining;
    const uint32_t low = std::max(partial.value << shift, utf8_min_code_point(partial.length));
    const uint32_t high = std::min((partial.value << shift) | ((1u << shift) - 1), max_code_point);
    if (low > high || (low >= 0xD800 && high <= 0xDFFF)) return false;  // overlong, too large, or a surrogate
    return std::ranges::any_of(stacks, [&](uint32_t id) {
        return id != empty_stack && grammar_->char_set(nodes_[id].char_set).intersects(low, high);
    });
}

bool GrammarMatcher::step(std::span<const uint32_t> stacks, const Partial& partial, uint8_t byte,
                          std::vector<uint32_t>& buffer, std::span<const uint32_t>& next, Partial& next_partial) {
    if (partial.remaining == 0) {
        if (byte < 0x80) {
            if (!advance(stacks, byte, buffer)) return false;
            next = buffer;
            next_partial = {};
            return true;
        }
        const size_t length = utf8_length(byte);
        if (length == 1) return false;  // a continuation byte, or one that never starts a character
        next_partial = {.value = uint32_t(byte & (0x7F >> length)), .remaining = uint8_t(length - 1), .length = uint8_t(length)};
        next = stacks;
        return partial_possible(stacks, next_partial);
    }
    if ((byte & 0xC0) != 0x80) return false;
    const uint32_t value = partial.value << 6 | (byte & 0x3F);
    if (partial.remaining > 1) {
        next_partial = {.value = value, .remaining = uint8_t(partial.remaining - 1), .length = partial.length};
        next = stacks;
        return partial_possible(stacks, next_partial);
    }
    if (value < utf8_min_code_point(partial.length) || !is_valid_code_point(value) || !advance(stacks, value, buffer))
        return false;
    next = buffer;
    next_partial = {};
    return true;
}

bool GrammarMatcher::run(std::string_view bytes, std::span<const uint32_t>& stacks, Partial& partial) {
    work_ = 0;
    stacks = stacks_;
    partial = partial_;
    for (char byte : bytes) {
        // Write into the scratch buffer the current stacks do not live in.
        std::vector<uint32_t>& buffer = stacks.data() == walk_[0].data() ? walk_[1] : walk_[0];
        std::span<const uint32_t> next;
        Partial next_partial;
        if (!step(stacks, partial, uint8_t(byte), buffer, next, next_partial)) return false;
        stacks = next;
        partial = next_partial;
    }
    return true;
}

bool GrammarMatcher::accept_text(std::string_view bytes) {
    std::span<const uint32_t> stacks;
    Partial partial;
    if (!run(bytes, stacks, partial)) return false;
    if (stacks.data() != stacks_.data()) stacks_.assign(stacks.begin(), stacks.end());
    partial_ = partial;
    if (nodes_.size() > compact_above_nodes) compact();
    return true;
}

bool GrammarMatcher::can_end() const {
    return partial_.remaining == 0 && !stacks_.empty() && stacks_.front() == empty_stack;
}

bool GrammarMatcher::can_continue() const {
    return partial_.remaining > 0 || stacks_.size() > (can_end() ? 1u : 0u);
}

bool GrammarMatcher::allows(TokenId id) {
    if (!tokens_) fail("grammar matcher: token calls need a token table");
    if (id < 0 || size_t(id) >= tokens_->size()) return false;
    switch (tokens_->kind(id)) {
        case TokenTable::Kind::End: return can_end();
        case TokenTable::Kind::Special: return false;
        case TokenTable::Kind::Text: break;
    }
    std::span<const uint32_t> stacks;
    Partial partial;
    return run(tokens_->piece(id), stacks, partial);
}

// A stack empties by matching the rest of each frame's alternative, the top frame's first: the sum of
// their rest lengths, remembered per node (the frames below are shared by many stacks).
uint32_t GrammarMatcher::distance(uint32_t stack) {
    chain_.clear();
    uint32_t node = stack;
    for (; node != empty_stack && nodes_[node].distance == uncomputed; node = nodes_[node].parent) chain_.push_back(node);
    uint32_t below = node == empty_stack ? 0 : nodes_[node].distance;
    for (size_t i = chain_.size(); i-- > 0;) {
        const uint32_t rest = grammar_->rest_length(nodes_[chain_[i]].position);
        below = rest >= Grammar::none_shorter - below ? Grammar::none_shorter : rest + below;
        nodes_[chain_[i]].distance = below;
    }
    return below;
}

uint32_t GrammarMatcher::distance(std::span<const uint32_t> stacks) {
    uint32_t nearest = Grammar::none_shorter;
    for (uint32_t stack : stacks) nearest = std::min(nearest, distance(stack));
    return nearest;
}

namespace {

// A character begun but unfinished costs its remaining bytes too: a token each, where only byte tokens
// can finish it.
uint32_t with_partial(uint32_t distance, uint32_t remaining) {
    return distance >= Grammar::none_shorter - remaining ? Grammar::none_shorter : distance + remaining;
}

}  // namespace

uint32_t GrammarMatcher::distance_to_end() { return with_partial(distance(std::span<const uint32_t>(stacks_)), partial_.remaining); }

uint32_t GrammarMatcher::distance_after(TokenId id) {
    if (!tokens_) fail("grammar matcher: token calls need a token table");
    if (id < 0 || size_t(id) >= tokens_->size()) return Grammar::none_shorter;
    switch (tokens_->kind(id)) {
        case TokenTable::Kind::End: return can_end() ? 0 : Grammar::none_shorter;
        case TokenTable::Kind::Special: return Grammar::none_shorter;
        case TokenTable::Kind::Text: break;
    }
    std::span<const uint32_t> stacks;
    Partial partial;
    if (!run(tokens_->piece(id), stacks, partial)) return Grammar::none_shorter;
    return with_partial(distance(stacks), partial.remaining);
}

void GrammarMatcher::accept(TokenId id) {
    if (!allows(id)) fail("the grammar does not allow token {} here", id);
    if (tokens_->kind(id) == TokenTable::Kind::Text) accept_text(tokens_->piece(id));
}

void GrammarMatcher::walk_trie(uint32_t trie_node, std::span<const uint32_t> stacks, const Partial& partial, size_t depth,
                               std::vector<uint64_t>& bits) {
    const std::span<const TokenTable::TrieNode> trie = tokens_->trie();
    const std::span<const TokenId> trie_tokens = tokens_->trie_tokens();
    const TokenTable::TrieNode& node = trie[trie_node];
    for (uint32_t child = node.first_child; child < node.first_child + node.n_children; ++child) {
        std::span<const uint32_t> next;
        Partial next_partial;
        if (!step(stacks, partial, trie[child].byte, trie_levels_[depth], next, next_partial)) continue;
        for (uint32_t i = 0; i < trie[child].n_tokens; ++i) {
            const TokenId id = trie_tokens[trie[child].first_token + i];
            bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
        }
        if (trie[child].n_children) walk_trie(child, next, next_partial, depth + 1, bits);
    }
}

const std::vector<uint64_t>* GrammarMatcher::cached_mask() {
    for (CachedMask& mask : masks_)
        if (mask.partial == partial_ && mask.stacks == stacks_) {
            mask.used = ++mask_clock_;
            return &mask.bits;
        }
    return nullptr;
}

const std::vector<uint64_t>& GrammarMatcher::allowed_tokens() {
    if (!tokens_) fail("grammar matcher: token calls need a token table");
    if (const std::vector<uint64_t>* cached = cached_mask()) return *cached;
    if (masks_.size() < mask_cache_size) masks_.emplace_back();
    CachedMask& mask = masks_.size() < mask_cache_size ? masks_.back()
                                                        : *std::ranges::min_element(masks_, {}, &CachedMask::used);
    mask.stacks = stacks_;
    mask.partial = partial_;
    mask.used = ++mask_clock_;
    mask.bits.assign((tokens_->size() + 63) / 64, 0);
    work_ = 0;
    walk_trie(0, stacks_, partial_, 0, mask.bits);
    if (can_end())
        for (TokenId id : tokens_->end_tokens()) mask.bits[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    return mask.bits;
}

// Re-interns the current stacks alone in a fresh arena, so that memory stays bounded over a long
// generation that keeps opening new nesting.
void GrammarMatcher::compact() {
    std::vector<std::vector<uint32_t>> chains;
    for (uint32_t id : stacks_) {
        std::vector<uint32_t>& chain = chains.emplace_back();
        for (uint32_t n = id; n != empty_stack; n = nodes_[n].parent) chain.push_back(nodes_[n].position);
    }
    nodes_.resize(1);
    interned_.clear();
    successor_pool_.clear();
    masks_.clear();
    visit_marks_.clear();
    advance_marks_.clear();
    stacks_.clear();
    for (const std::vector<uint32_t>& chain : chains) {
        uint32_t id = empty_stack;
        for (size_t i = chain.size(); i-- > 0;) id = intern(chain[i], id);
        stacks_.push_back(id);
    }
    sort_unique(stacks_);
}

}  // namespace vkllm::sampling
