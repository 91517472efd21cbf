#include "sampling/vocab_table.h"

namespace vkllm::sampling {

std::shared_ptr<const TokenTable> vocab_token_table(const tokenizer::Tokenizer& tokenizer) {
    const tokenizer::Vocab& vocab = tokenizer.vocab();
    constexpr uint32_t never_text = tokenizer::attr_control | tokenizer::attr_unknown | tokenizer::attr_unused;
    std::vector<std::string> pieces(vocab.size());
    std::vector<TokenTable::Kind> kinds(vocab.size(), TokenTable::Kind::Text);
    for (size_t id = 0; id < vocab.size(); ++id) {
        if (tokenizer.is_eog(TokenId(id))) kinds[id] = TokenTable::Kind::End;
        else if (vocab.attrs[id] & never_text) kinds[id] = TokenTable::Kind::Special;
        else pieces[id] = tokenizer.token_to_piece(TokenId(id), /*special=*/false);
    }
    return std::make_shared<TokenTable>(std::move(pieces), std::move(kinds));
}

}  // namespace vkllm::sampling
