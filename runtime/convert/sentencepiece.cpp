#include "convert/sentencepiece.h"

#include <cstring>

#include "core/error.h"
#include "core/file.h"

namespace vkllm::convert {

namespace {

enum class WireType : uint32_t { Varint = 0, Fixed64 = 1, Bytes = 2, GroupStart = 3, GroupEnd = 4, Fixed32 = 5 };

struct Tag {
    uint32_t field;
    WireType wire;
    uint64_t offset;  // where the tag starts, for messages
};

// Groups nest; hostile input must not recurse without bound.
constexpr int max_group_depth = 64;

// Reads one message's bytes; offsets in errors are absolute in the file.
class WireReader {
public:
    WireReader(std::span<const std::byte> bytes, uint64_t base, const std::string& name)
        : bytes_(bytes), base_(base), name_(name) {}

    bool done() const { return pos_ == bytes_.size(); }
    uint64_t offset() const { return base_ + pos_; }

    uint64_t varint() {
        const uint64_t start = offset();
        uint64_t value = 0;
        for (int shift = 0;; shift += 7) {  // the tenth byte either ends the varint or fails
            if (done()) fail("{}: a varint at byte {} runs past the end of its message", name_, start);
            const auto byte = uint8_t(bytes_[pos_++]);
            if (shift == 63 && byte > 1) fail("{}: the varint at byte {} does not fit in 64 bits", name_, start);
            value |= uint64_t(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) return value;
        }
    }

    Tag tag() {
        const uint64_t start = offset();
        const uint64_t key = varint();
        const uint64_t field = key >> 3, wire = key & 7;
        if (field == 0 || field > 0x1fffffff)
            fail("{}: the field number {} at byte {} is not a valid protobuf field number", name_, field, start);
        if (wire > 5) fail("{}: field {} at byte {} has the unknown wire type {}", name_, field, start, wire);
        return {uint32_t(field), WireType(wire), start};
    }

    std::span<const std::byte> take(uint64_t size, uint64_t start) {
        if (size > bytes_.size() - pos_)
            fail("{}: the field at byte {} claims {} bytes but its message has {} left", name_, start, size,
                 bytes_.size() - pos_);
        const std::span<const std::byte> out = bytes_.subspan(pos_, size);
        pos_ += size;
        return out;
    }

    // A length-delimited field's bytes and a reader over them.
    std::span<const std::byte> bytes_field(const Tag& t) { return take(varint(), t.offset); }
    WireReader message(const Tag& t) {
        const std::span<const std::byte> body = bytes_field(t);
        return {body, base_ + uint64_t(body.data() - bytes_.data()), name_};
    }

    float fixed32_float(const Tag& t) {
        float value;
        std::memcpy(&value, take(4, t.offset).data(), 4);  // protobuf is little-endian, as are our targets
        return value;
    }

    void skip(const Tag& t, int depth = 0) {
        switch (t.wire) {
            case WireType::Varint: varint(); return;
            case WireType::Fixed64: take(8, t.offset); return;
            case WireType::Bytes: bytes_field(t); return;
            case WireType::Fixed32: take(4, t.offset); return;
            case WireType::GroupStart: skip_group(t, depth + 1); return;
            case WireType::GroupEnd:
                fail("{}: an end-group tag for field {} at byte {} closes no group", name_, t.field, t.offset);
        }
    }

    // Checks a kept field's wire type.
    void expect(const Tag& t, WireType wire, const char* what) const {
        if (t.wire != wire)
            fail("{}: field {} ({}) at byte {} has wire type {} where {} was expected", name_, t.field, what,
                 t.offset, uint32_t(t.wire), uint32_t(wire));
    }

    const std::string& name() const { return name_; }

private:
    void skip_group(const Tag& start, int depth) {
        if (depth > max_group_depth)
            fail("{}: groups nest more than {} deep at byte {}", name_, max_group_depth, start.offset);
        for (;;) {
            if (done()) fail("{}: the group of field {} at byte {} is never closed", name_, start.field, start.offset);
            const Tag t = tag();
            if (t.wire == WireType::GroupEnd) {
                if (t.field != start.field)
                    fail("{}: the end-group tag at byte {} closes field {} inside the group of field {}", name_,
                         t.offset, t.field, start.field);
                return;
            }
            skip(t, depth);
        }
    }

    std::span<const std::byte> bytes_;
    uint64_t base_;
    size_t pos_ = 0;
    const std::string& name_;
};

Piece parse_piece(WireReader r) {
    Piece piece;
    while (!r.done()) {
        const Tag t = r.tag();
        if (t.field == 1) {
            r.expect(t, WireType::Bytes, "piece");
            const std::span<const std::byte> text = r.bytes_field(t);
            piece.text.assign(reinterpret_cast<const char*>(text.data()), text.size());
        } else if (t.field == 2) {
            r.expect(t, WireType::Fixed32, "score");
            piece.score = r.fixed32_float(t);
        } else if (t.field == 3) {
            r.expect(t, WireType::Varint, "type");
            const auto type = int64_t(r.varint());
            if (type < 1 || type > 6)
                fail("{}: piece type {} at byte {} is not one of SentencePiece's six", r.name(), type, t.offset);
            piece.type = PieceType(type);
        } else {
            r.skip(t);
        }
    }
    return piece;
}

// Fields of a repeated message merge into what earlier occurrences set, as protobuf merges them.
void parse_trainer_spec(WireReader r, SentencePieceModel& model) {
    while (!r.done()) {
        const Tag t = r.tag();
        if (t.field == 3) {
            r.expect(t, WireType::Varint, "trainer_spec.model_type");
            const auto type = int64_t(r.varint());
            if (type < 1 || type > 4)
                fail("{}: trainer_spec.model_type {} at byte {} is not UNIGRAM, BPE, WORD or CHAR", r.name(), type,
                     t.offset);
            model.model_type = SpmModelType(type);
        } else if (t.field == 35) {
            r.expect(t, WireType::Varint, "trainer_spec.byte_fallback");
            model.byte_fallback = r.varint() != 0;
        } else {
            r.skip(t);
        }
    }
}

void parse_normalizer_spec(WireReader r, SentencePieceModel& model) {
    while (!r.done()) {
        const Tag t = r.tag();
        if (t.field == 3) {
            r.expect(t, WireType::Varint, "normalizer_spec.add_dummy_prefix");
            model.add_dummy_prefix = r.varint() != 0;
        } else if (t.field == 4) {
            r.expect(t, WireType::Varint, "normalizer_spec.remove_extra_whitespaces");
            model.remove_extra_whitespaces = r.varint() != 0;
        } else {
            r.skip(t);
        }
    }
}

}  // namespace

SentencePieceModel parse_sentencepiece(std::span<const std::byte> bytes, const std::string& name) {
    SentencePieceModel model;
    WireReader r(bytes, 0, name);
    while (!r.done()) {
        const Tag t = r.tag();
        if (t.field == 1) {
            r.expect(t, WireType::Bytes, "pieces");
            model.pieces.push_back(parse_piece(r.message(t)));
        } else if (t.field == 2) {
            r.expect(t, WireType::Bytes, "trainer_spec");
            parse_trainer_spec(r.message(t), model);
        } else if (t.field == 3) {
            r.expect(t, WireType::Bytes, "normalizer_spec");
            parse_normalizer_spec(r.message(t), model);
        } else {
            r.skip(t);
        }
    }
    if (model.pieces.empty()) fail("{}: the SentencePiece model has no pieces", name);
    return model;
}

SentencePieceModel read_sentencepiece(const std::filesystem::path& path) {
    return parse_sentencepiece(read_file(path, "SentencePiece model"), path.string());
}

}  // namespace vkllm::convert
