package lake

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/golang/snappy"
	"github.com/hamba/avro/v2"
	"github.com/klauspost/compress/zstd"
)

// The Avro object container format (Avro specification, "Object Container Files"), read here
// rather than through hamba/avro's ocf package: that package parses its header schema in an
// initialiser (about 1 % of a lake agent's start) and sizes its buffers by what the file claims,
// so a corrupt block length became a multi-gigabyte allocation or a panic. Records are decoded
// with hamba/avro by the writer schema of the file's header.

// maxAvroBlock bounds a block, compressed or not. Iceberg writers flush manifests in blocks of
// well under a megabyte; this only stops a corrupt length from sizing an allocation.
const maxAvroBlock = 64 << 20

var avroMagic = []byte{'O', 'b', 'j', 1}

// avroAPI decodes records with hamba/avro's defaults, except that an array or map holds at most
// 2^20 elements (a manifest's metric maps have one per column; the default is whatever the heap
// allows, so a corrupt count was one huge allocation). Built on first use: freezing a config
// allocates its caches.
var avroAPI = sync.OnceValue(func() avro.API {
	return avro.Config{MaxByteSliceSize: maxAvroBlock, MaxSliceAllocSize: 1 << 20}.Freeze()
})

// decodeAvroFile calls each, count times per block, with a decoder positioned at the file's next
// record. Each file's schema is parsed into a cache of its own: Iceberg names its records after
// field ids ("r102" is every table's partition record, with different fields), so a shared cache
// would resolve one file's names to another's.
func decodeAvroFile(r io.Reader, each func(*avro.Decoder) error) error {
	br := bufio.NewReader(r)
	magic := make([]byte, len(avroMagic))
	if _, err := io.ReadFull(br, magic); err != nil || !bytes.Equal(magic, avroMagic) {
		return fmt.Errorf("not an Avro object container file")
	}
	meta, err := readAvroMeta(br)
	if err != nil {
		return fmt.Errorf("avro header: %w", err)
	}
	schema, err := avro.ParseBytesWithCache(meta["avro.schema"], "", &avro.SchemaCache{})
	if err != nil {
		return fmt.Errorf("avro header schema: %w", err)
	}
	decompress, release, err := avroCodec(string(meta["avro.codec"]))
	if err != nil {
		return err
	}
	defer release()
	var sync [16]byte
	if _, err := io.ReadFull(br, sync[:]); err != nil {
		return fmt.Errorf("avro header: %w", err)
	}
	for {
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			return nil
		}
		count, err := readAvroLong(br)
		if err != nil {
			return fmt.Errorf("avro block: %w", err)
		}
		size, err := readAvroLong(br)
		if err != nil {
			return fmt.Errorf("avro block: %w", err)
		}
		if count < 0 || size < 0 || size > maxAvroBlock {
			return fmt.Errorf("avro block of %d records in %d bytes is malformed", count, size)
		}
		block, err := readN(br, size)
		if err != nil {
			return fmt.Errorf("avro block: %w", err)
		}
		var mark [16]byte
		if _, err := io.ReadFull(br, mark[:]); err != nil || mark != sync {
			return fmt.Errorf("avro block not followed by the file's sync marker")
		}
		data, err := decompress(block)
		if err != nil {
			return fmt.Errorf("avro block: %w", err)
		}
		if count > int64(len(data)) {
			// Every record of a manifest (list) takes at least a byte.
			return fmt.Errorf("avro block of %d records in %d bytes is malformed", count, len(data))
		}
		dec := avroAPI().NewDecoder(schema, bytes.NewReader(data))
		for i := int64(0); i < count; i++ {
			if err := each(dec); err != nil {
				return err
			}
		}
	}
}

// readAvroMeta reads the header's metadata, an Avro map of bytes.
func readAvroMeta(r *bufio.Reader) (map[string][]byte, error) {
	meta := map[string][]byte{}
	for {
		n, err := readAvroLong(r)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return meta, nil
		}
		if n < 0 { // a negative count is followed by the block's size in bytes
			n = -n
			if _, err := readAvroLong(r); err != nil {
				return nil, err
			}
		}
		if n > 1024 {
			return nil, fmt.Errorf("%d metadata entries", n)
		}
		for i := int64(0); i < n; i++ {
			k, err := readAvroBytes(r)
			if err != nil {
				return nil, err
			}
			v, err := readAvroBytes(r)
			if err != nil {
				return nil, err
			}
			meta[string(k)] = v
		}
	}
}

func readAvroBytes(r *bufio.Reader) ([]byte, error) {
	n, err := readAvroLong(r)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > maxAvroBlock {
		return nil, fmt.Errorf("a string of %d bytes", n)
	}
	return readN(r, n)
}

// readN reads n bytes, growing the buffer as they arrive rather than by what a (possibly
// corrupt) length claims.
func readN(r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readAvroLong reads a zig-zag varint.
func readAvroLong(r *bufio.Reader) (int64, error) {
	u, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, err
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

// avroCodec is the block decompressor of a codec the specification names (bzip2 and xz, which
// no Iceberg writer defaults to, are refused), and what releases it once the file is read.
func avroCodec(name string) (decompress func([]byte) ([]byte, error), release func(), err error) {
	none := func() {}
	switch name {
	case "", "null":
		return func(b []byte) ([]byte, error) { return b, nil }, none, nil
	case "deflate":
		return func(b []byte) ([]byte, error) {
			return readLimited(flate.NewReader(bytes.NewReader(b)))
		}, none, nil
	case "snappy": // each block is followed by the CRC-32 of its uncompressed bytes
		return func(b []byte) ([]byte, error) {
			if len(b) < 4 {
				return nil, fmt.Errorf("snappy block without its checksum")
			}
			body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
			if n, err := snappy.DecodedLen(body); err != nil || n > maxAvroBlock {
				return nil, fmt.Errorf("snappy block of %d bytes: %v", n, err)
			}
			out, err := snappy.Decode(nil, body)
			if err != nil {
				return nil, err
			}
			if crc32.ChecksumIEEE(out) != sum {
				return nil, fmt.Errorf("snappy block checksum mismatch")
			}
			return out, nil
		}, none, nil
	case "zstandard":
		var dec *zstd.Decoder
		return func(b []byte) ([]byte, error) {
				if dec == nil {
					var err error
					if dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxAvroBlock)); err != nil {
						return nil, err
					}
				}
				return dec.DecodeAll(b, nil)
			}, func() {
				if dec != nil {
					dec.Close()
				}
			}, nil
	}
	return nil, nil, fmt.Errorf("avro codec %q is not read (null, deflate, snappy and zstandard are)", name)
}

// readLimited reads a decompressed block, refusing one larger than maxAvroBlock.
func readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxAvroBlock+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxAvroBlock {
		return nil, fmt.Errorf("a block decompresses to more than %d bytes", maxAvroBlock)
	}
	return out, nil
}
