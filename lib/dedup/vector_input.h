// Vectors a user already has, instead of embedding text: a side file with one
// row per record in input order (NumPy .npy, float32 N×D in C order, or raw
// little-endian float32 rows of a given dimension), or an array of numbers in
// a field of each record. Every row is checked (finite, not all zero) and
// scaled to unit length before the search.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "dedup/embedder.h"
#include "records/jsonl.h"

namespace forge::dedup {

// Reads a vector file: .npy when it starts with NumPy's magic bytes,
// otherwise raw float32 rows of raw_dim values (raw_dim 0: the file must be
// .npy). A missing file is NotFound; a malformed header, a dtype other than
// float32, Fortran order, a shape that is not N×D, a size that disagrees with
// the shape, or a dimension other than expected_dim (when not 0) is InvalidData
// naming the file. Rows are returned as stored, not yet checked.
Result<Matrix> ReadVectorFile(const std::string& path, size_t raw_dim, size_t expected_dim = 0);

// Parses the bytes of a whole .npy file (for tests and small files).
Result<Matrix> ParseNpy(const std::string& bytes, const std::string& name);

// Checks a row and scales it to unit length. Returns "" when it is usable,
// else why not ("element 3 is NaN", "is all zeros").
std::string CheckAndNormaliseRow(float* row, size_t dim);

// Appends the numbers of a JSON array to out. Returns "" when the value is a
// non-empty array of numbers, else why not.
std::string AppendJsonVector(const records::Json& value, std::vector<float>& out);

}  // namespace forge::dedup
