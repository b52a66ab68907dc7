package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// loadFS opens the file IO for location: S3 (s3://, s3a://, s3n://) through the AWS SDK's S3
// client, anything else (local files) through iceberg-go's io package. The lake only reads, so
// S3 needs only HEAD, ranged GET and a delimited listing; iceberg-go's S3 IO (gocloud.dev's blob
// over the same SDK, with Google's API and gRPC packages and OpenTelemetry behind it) cost the
// agents that link the lake about a tenth of their start.
func loadFS(ctx context.Context, props map[string]string, location string) (iceio.IO, error) {
	if location == "" {
		location = props["warehouse"]
	}
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("location %q: %w", location, err)
	}
	switch u.Scheme {
	case "s3", "s3a", "s3n":
		return newS3FS(ctx, props)
	}
	return iceio.LoadFS(ctx, props, location)
}

// s3FS reads objects named by full URIs (s3://bucket/key). It keeps the context it was opened
// with because iceberg-go's IO interface, which the catalogs and readers share, takes none.
type s3FS struct {
	ctx    context.Context
	client *s3.Client
}

// withContext is f for one caller's reads: the same client (its configuration and credential
// cache), that caller's context.
func (f *s3FS) withContext(ctx context.Context) *s3FS {
	return &s3FS{ctx: ctx, client: f.client}
}

// newS3FS builds the client from Iceberg's S3 properties (s3.region or client.region,
// s3.endpoint, s3.access-key-id, s3.secret-access-key, s3.session-token,
// s3.force-virtual-addressing); what they leave unset comes from the AWS default chain.
func newS3FS(ctx context.Context, props map[string]string) (*s3FS, error) {
	if v := props["s3.remote-signing-enabled"]; strings.EqualFold(v, "true") {
		return nil, fmt.Errorf("s3: remote request signing (s3.remote-signing-enabled) is not supported")
	}
	var opts []func(*awsconfig.LoadOptions) error
	if r := props["s3.region"]; r != "" {
		opts = append(opts, awsconfig.WithRegion(r))
	} else if r := props["client.region"]; r != "" {
		opts = append(opts, awsconfig.WithRegion(r))
	}
	key, secret := props["s3.access-key-id"], props["s3.secret-access-key"]
	if (key == "") != (secret == "") {
		return nil, fmt.Errorf("s3: set both s3.access-key-id and s3.secret-access-key, or neither")
	}
	if key != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, secret, props["s3.session-token"])))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := props["s3.endpoint"]
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			// A custom endpoint (MinIO, a gateway) is addressed by path unless told otherwise.
			o.UsePathStyle = !strings.EqualFold(props["s3.force-virtual-addressing"], "true")
		}
	})
	return &s3FS{ctx: ctx, client: client}, nil
}

// splitS3 splits s3://bucket/key without decoding it: object keys are taken as they are written
// (writers put URL-encoded partition values such as "name=a+b%3Ac" into real keys), so "+" and
// "%" stay themselves.
func splitS3(name string) (bucket, key string, err error) {
	_, rest, ok := strings.Cut(name, "://")
	bucket, key, _ = strings.Cut(rest, "/")
	if !ok || bucket == "" {
		return "", "", fmt.Errorf("%q is not an s3://bucket/key location", name)
	}
	return bucket, key, nil
}

// Open opens an object, or, for a name ending in "/" (or a bucket), a "directory" (a prefix that
// has objects under it) for ReadDir.
func (f *s3FS) Open(name string) (iceio.File, error) {
	bucket, key, err := splitS3(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if key != "" && !strings.HasSuffix(key, "/") {
		head, err := f.client.HeadObject(f.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err == nil {
			return &s3File{fs: f, bucket: bucket, key: key, size: aws.ToInt64(head.ContentLength), mod: aws.ToTime(head.LastModified)}, nil
		}
		if !isS3NotFound(err) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		// A missing file (version-hint.text, say) is not listed as a directory (a name ending in
		// "/" is): no LIST, which a read-only role without s3:ListBucket answers with AccessDenied.
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	prefix := strings.TrimSuffix(key, "/")
	if prefix != "" {
		prefix += "/"
	}
	names, err := f.list(bucket, prefix)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if len(names) == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &s3File{fs: f, bucket: bucket, key: prefix, dir: names}, nil
}

// list is the entries directly under prefix: objects and common prefixes, by base name.
func (f *s3FS) list(bucket, prefix string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	p := s3.NewListObjectsV2Paginator(f.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String("/")})
	for p.HasMorePages() {
		page, err := p.NextPage(f.ctx)
		if err != nil {
			return nil, err
		}
		for _, cp := range page.CommonPrefixes {
			out = append(out, s3Entry{name: path.Base(strings.TrimSuffix(aws.ToString(cp.Prefix), "/")), dir: true})
		}
		for _, o := range page.Contents {
			if k := aws.ToString(o.Key); k != prefix {
				out = append(out, s3Entry{name: path.Base(k), size: aws.ToInt64(o.Size), mod: aws.ToTime(o.LastModified)})
			}
		}
	}
	return out, nil
}

func isS3NotFound(err error) bool {
	var nf *s3types.NotFound
	var nk *s3types.NoSuchKey
	return errors.As(err, &nf) || errors.As(err, &nk)
}

// Remove is refused: the lake never writes.
func (f *s3FS) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: errors.ErrUnsupported}
}

// s3File reads an object: ReadAt by one ranged GET a call (Parquet readers seek to the footer,
// then to each column chunk), Read by streaming one GET from the offset to the end (metadata and
// Avro files are read front to back through small buffers; a GET per buffer would be thousands
// of requests for a large manifest). It also lists a directory.
type s3File struct {
	fs          *s3FS
	bucket, key string
	size        int64
	mod         time.Time
	off         int64
	dir         []fs.DirEntry // a directory's entries, nil for an object
	// body streams the object from bodyOff for Read; a Seek elsewhere reopens it.
	body    io.ReadCloser
	bodyOff int64
}

func (o *s3File) ReadAt(p []byte, off int64) (int, error) {
	if o.dir != nil {
		return 0, fmt.Errorf("s3://%s/%s is a directory", o.bucket, o.key)
	}
	if off >= o.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	end := min(off+int64(len(p)), o.size) - 1
	out, err := o.fs.client.GetObject(o.fs.ctx, &s3.GetObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, end))})
	if err != nil {
		return 0, fmt.Errorf("s3://%s/%s: %w", o.bucket, o.key, err)
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p[:end-off+1])
	if err != nil {
		return n, fmt.Errorf("s3://%s/%s: %w", o.bucket, o.key, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (o *s3File) Read(p []byte) (int, error) {
	if o.dir != nil {
		return 0, fmt.Errorf("s3://%s/%s is a directory", o.bucket, o.key)
	}
	if o.off >= o.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if o.body == nil || o.bodyOff != o.off {
		o.closeBody()
		out, err := o.fs.client.GetObject(o.fs.ctx, &s3.GetObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key),
			Range: aws.String(fmt.Sprintf("bytes=%d-", o.off))})
		if err != nil {
			return 0, fmt.Errorf("s3://%s/%s: %w", o.bucket, o.key, err)
		}
		o.body, o.bodyOff = out.Body, o.off
	}
	n, err := o.body.Read(p[:min(int64(len(p)), o.size-o.off)])
	o.off += int64(n)
	o.bodyOff = o.off
	switch {
	case errors.Is(err, io.EOF) && o.off < o.size:
		o.closeBody()
		return n, fmt.Errorf("s3://%s/%s: %w", o.bucket, o.key, io.ErrUnexpectedEOF)
	case errors.Is(err, io.EOF):
		o.closeBody()
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil // the next Read answers io.EOF
	case err != nil:
		o.closeBody()
		return n, fmt.Errorf("s3://%s/%s: %w", o.bucket, o.key, err)
	}
	return n, nil
}

func (o *s3File) closeBody() {
	if o.body != nil {
		_ = o.body.Close()
		o.body = nil
	}
}

func (o *s3File) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.off
	case io.SeekEnd:
		offset += o.size
	default:
		return 0, fmt.Errorf("seek: whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek to %d, before the start", offset)
	}
	o.off = offset
	return offset, nil
}

func (o *s3File) Stat() (fs.FileInfo, error) {
	return s3Entry{name: path.Base(strings.TrimSuffix(o.key, "/")), size: o.size, mod: o.mod, dir: o.dir != nil}, nil
}

// ReadDir lists a directory's entries (all of them whatever n is; the lake asks for all).
func (o *s3File) ReadDir(int) ([]fs.DirEntry, error) {
	if o.dir == nil {
		return nil, fmt.Errorf("s3://%s/%s is not a directory", o.bucket, o.key)
	}
	return o.dir, nil
}

func (o *s3File) Close() error {
	o.closeBody()
	return nil
}

// s3Entry describes an object or a common prefix.
type s3Entry struct {
	name string
	size int64
	mod  time.Time
	dir  bool
}

func (e s3Entry) Name() string { return e.name }
func (e s3Entry) Size() int64  { return e.size }
func (e s3Entry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (e s3Entry) ModTime() time.Time         { return e.mod }
func (e s3Entry) IsDir() bool                { return e.dir }
func (e s3Entry) Sys() any                   { return nil }
func (e s3Entry) Type() fs.FileMode          { return e.Mode().Type() }
func (e s3Entry) Info() (fs.FileInfo, error) { return e, nil }
