// A conversation's image parts as each trainer's SFT format marks them:
// TRL's typed content parts ({"type": "image"}, the pixels in the row's
// images column) and LLaMA-Factory's and veRL's "<image>" tags in a
// message's text (as many tags as images, in order).
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

namespace forge::pack {

// Image parts in OpenAI chat messages (image_url, input_image, image), in order.
size_t CountImageParts(const nlohmann::json& messages);
// Each image part replaced by {"type": "image"}; everything else as it is.
nlohmann::json TrlMessages(const nlohmann::json& messages);
// Each message's content as one string: its text parts joined, "<image>" where an image part was.
nlohmann::json ImageTagMessages(const nlohmann::json& messages);

}  // namespace forge::pack
