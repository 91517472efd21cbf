#include "sentencepiece_writer.h"

#include <cstdint>
#include <cstring>
#include <string_view>

namespace vkllm::test {

namespace {

class Message {
public:
    void varint(uint64_t value) {
        for (; value >= 0x80; value >>= 7) bytes_.push_back(std::byte(uint8_t(value | 0x80)));
        bytes_.push_back(std::byte(uint8_t(value)));
    }
    void key(uint32_t field, uint32_t wire) { varint(uint64_t(field) << 3 | wire); }
    void varint_field(uint32_t field, uint64_t value) {
        key(field, 0);
        varint(value);
    }
    void bytes_field(uint32_t field, std::string_view text) {
        key(field, 2);
        varint(text.size());
        for (char c : text) bytes_.push_back(std::byte(c));
    }
    void message_field(uint32_t field, const Message& m) {
        bytes_field(field, {reinterpret_cast<const char*>(m.bytes_.data()), m.bytes_.size()});
    }
    void float_field(uint32_t field, float value) {
        key(field, 5);
        uint8_t raw[4];
        std::memcpy(raw, &value, 4);
        for (uint8_t b : raw) bytes_.push_back(std::byte(b));
    }
    void fixed64_field(uint32_t field, uint64_t value) {
        key(field, 1);
        for (int i = 0; i < 8; ++i) bytes_.push_back(std::byte(uint8_t(value >> (8 * i))));
    }
    // A group holding one varint and a nested group.
    void group_field(uint32_t field) {
        key(field, 3);
        varint_field(1, 7);
        key(field + 1, 3);
        key(field + 1, 4);
        key(field, 4);
    }

    const std::vector<std::byte>& bytes() const { return bytes_; }

private:
    std::vector<std::byte> bytes_;
};

}  // namespace

std::vector<std::byte> sentencepiece_bytes(const convert::SentencePieceModel& model, bool unknown_fields) {
    Message proto;
    if (unknown_fields) proto.fixed64_field(99, 0x0123456789abcdef);
    for (const convert::Piece& piece : model.pieces) {
        Message m;
        m.bytes_field(1, piece.text);
        m.float_field(2, piece.score);
        if (piece.type != convert::PieceType::Normal) m.varint_field(3, uint64_t(piece.type));  // the default
        proto.message_field(1, m);
    }
    Message trainer;
    if (unknown_fields) {
        trainer.bytes_field(1, "corpus.txt");                // input
        trainer.varint_field(4, model.pieces.size());        // vocab_size
        trainer.bytes_field(44, " \xE2\x81\x87 ");           // unk_surface
    }
    trainer.varint_field(3, uint64_t(model.model_type));
    trainer.varint_field(35, model.byte_fallback);
    proto.message_field(2, trainer);
    Message normalizer;
    if (unknown_fields) {
        normalizer.bytes_field(1, "identity");
        normalizer.bytes_field(2, std::string_view("\0\1\2", 3));  // precompiled_charsmap
    }
    normalizer.varint_field(3, model.add_dummy_prefix);
    normalizer.varint_field(4, model.remove_extra_whitespaces);
    proto.message_field(3, normalizer);
    if (unknown_fields) {
        Message sample;  // self_test_data { samples { input expected } }
        sample.bytes_field(1, "hello");
        sample.bytes_field(2, "\xE2\x96\x81hello");
        Message self_test;
        self_test.message_field(1, sample);
        proto.message_field(4, self_test);
        proto.group_field(100);
    }
    return proto.bytes();
}

}  // namespace vkllm::test
