package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"
	"github.com/google/uuid"

	"seatd/internal/apperr"
)

// maxBody is the largest request body read, JSON or form: the biggest
// legitimate one (a purchase of many holds) is a few hundred bytes.
const maxBody = 16 << 10

// Request media types.
const (
	MediaJSON = "application/json"
	MediaForm = "application/x-www-form-urlencoded"
)

// Decoder turns request bodies into validated input structs. One instance
// (and one validator, which caches struct metadata) serves every request.
type Decoder struct {
	v *validator.Validate
}

// NewDecoder returns a decoder whose validator knows the "id" tag (a
// UUID, as uuid.Parse accepts it) and reports fields by their JSON names.
func NewDecoder() *Decoder {
	v := validator.New(validator.WithRequiredStructEnabled())
	// Report fields by the names callers send.
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		if name == "" {
			return f.Name
		}
		return name
	})
	// "id" is what uuid.Parse accepts, so validation and parsing agree.
	if err := v.RegisterValidation("id", func(fl validator.FieldLevel) bool {
		_, err := uuid.Parse(fl.Field().String())
		return err == nil
	}); err != nil {
		panic(err) // a bad tag name: a bug caught at start
	}
	return &Decoder{v: v}
}

// MediaType is the request's Content-Type without parameters, lower-cased;
// "" when absent or unparsable.
func MediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// UnsupportedMedia refuses a body of another media type than want (415).
func UnsupportedMedia(want string) error {
	return apperr.E(codeUnsupportedMediaType, "send the request body as %s", want)
}

// readBody reads at most maxBody bytes of the body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return ReadBodyUpTo(w, r, maxBody)
}

// ReadBodyUpTo reads at most limit bytes of the body (413 beyond); only
// routes taking whole documents (charts) ask for more than the 16 KiB
// every other body is held to.
func ReadBodyUpTo(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, apperr.E(codeTooLarge, "the request body is larger than %d bytes", limit)
	case err != nil:
		return nil, apperr.E(apperr.BadRequest, "the request body could not be read")
	}
	return b, nil
}

// JSON decodes a required JSON body into dst and validates it.
func (d *Decoder) JSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if MediaType(r) != MediaJSON {
		return UnsupportedMedia(MediaJSON)
	}
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	return d.unmarshal(b, dst)
}

// OptionalJSON decodes a JSON body into dst if there is one; an empty body
// leaves dst as it is and needs no Content-Type.
func (d *Decoder) OptionalJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	b, err := readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return d.Validate(dst)
	}
	if MediaType(r) != MediaJSON {
		return UnsupportedMedia(MediaJSON)
	}
	return d.unmarshal(b, dst)
}

// unmarshal decodes exactly one JSON value with no unknown fields, then
// validates it. encoding/json would silently replace invalid UTF-8 with
// U+FFFD, so the raw bytes are checked first.
func (d *Decoder) unmarshal(b []byte, dst any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return apperr.E(apperr.BadRequest, "the request body is empty; send a JSON object")
	}
	if !utf8.Valid(b) {
		return apperr.E(apperr.BadRequest, "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return apperr.E(apperr.BadRequest, "the request body must hold exactly one JSON value")
	}
	// JSON escapes (\u0000) reach the strings only now.
	if err := structText(dst); err != nil {
		return err
	}
	return d.Validate(dst)
}

// jsonError turns a decoding failure into what the caller did wrong.
func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return apperr.E(apperr.BadRequest, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.E(apperr.BadRequest, "the request body is not valid JSON (it ends too early)")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return apperr.E(apperr.Invalid, "the request body must be a JSON object")
		}
		return &apperr.Error{Code: apperr.Invalid, Message: "a field has the wrong type",
			Fields: map[string]string{clip(typ.Field): "must be " + jsonKind(typ.Type)}}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this one.
		name, uerr := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		if uerr != nil {
			name = "?"
		}
		return &apperr.Error{Code: apperr.Invalid, Message: "the request has a field this route does not take",
			Fields: map[string]string{clip(name): "is not a known field"}}
	}
	var inv *json.InvalidUnmarshalError
	if errors.As(err, &inv) {
		return fmt.Errorf("decode: %w", err) // a bug: internal
	}
	return apperr.E(apperr.BadRequest, "the request body is not valid JSON")
}

// clip bounds a caller-chosen name echoed back in an error.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.ToValidUTF8(s, "")
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "of another type"
	}
}

// Validate checks dst's `validate` tags and reports every failing field
// (422 invalid).
func (d *Decoder) Validate(dst any) error {
	err := d.v.Struct(dst)
	if err == nil {
		return nil
	}
	var ves validator.ValidationErrors
	if !errors.As(err, &ves) {
		return fmt.Errorf("validate: %w", err) // not a struct: a bug
	}
	fields := make(map[string]string, len(ves))
	for _, fe := range ves {
		name := fe.Namespace()
		if _, rest, ok := strings.Cut(name, "."); ok {
			name = rest // drop the struct's own name
		}
		fields[name] = fieldMessage(fe)
	}
	return &apperr.Error{Code: apperr.Invalid, Message: "some fields are not valid", Fields: fields}
}

func fieldMessage(fe validator.FieldError) string {
	list := fe.Kind() == reflect.Slice
	switch fe.Tag() {
	case "required":
		return "is required"
	case "id":
		return "must be a UUID"
	case "max":
		if list {
			return "must list at most " + fe.Param() + " items"
		}
		return "must be at most " + fe.Param() + " characters"
	case "min":
		if list {
			return "must list at least " + fe.Param() + " items"
		}
		return "must be at least " + fe.Param() + " characters"
	case "unique":
		return "must not repeat a value"
	case "printascii":
		return "must be printable ASCII"
	case "oneof":
		return "must be one of " + strings.ReplaceAll(fe.Param(), " ", ", ")
	default:
		return "is not valid"
	}
}

// Form decodes a url-encoded form body. Unknown fields are ignored, as
// browsers send submit buttons and the like; keys and values must be
// UTF-8 (400) without control characters (422, naming the fields).
func Form(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	b, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	vs, err := url.ParseQuery(string(b))
	if err != nil {
		return nil, apperr.E(apperr.BadRequest, "the form is not valid url-encoded data")
	}
	for k, v := range vs {
		if !utf8.ValidString(k) {
			return nil, apperr.E(apperr.BadRequest, "the form is not valid UTF-8")
		}
		for _, x := range v {
			if !utf8.ValidString(x) {
				return nil, apperr.E(apperr.BadRequest, "the form is not valid UTF-8")
			}
		}
	}
	fields := map[string]string{}
	valuesText(vs, fields)
	if err := textError(fields); err != nil {
		return nil, err
	}
	return vs, nil
}

// JSONOrForm decodes a body sent as JSON or as a form, telling which;
// fromForm fills dst from the form values.
func (d *Decoder) JSONOrForm(w http.ResponseWriter, r *http.Request, dst any, fromForm func(url.Values)) (isForm bool, err error) {
	switch MediaType(r) {
	case MediaJSON:
		return false, d.JSON(w, r, dst)
	case MediaForm:
		vs, err := Form(w, r)
		if err != nil {
			return true, err
		}
		fromForm(vs)
		return true, d.Validate(dst)
	default:
		return false, UnsupportedMedia(MediaJSON + " or " + MediaForm)
	}
}

// PathID parses the id in path segment name; a malformed id names nothing,
// so it is 404 like a missing one.
func PathID(r *http.Request, name string) (uuid.UUID, error) {
	return ParsePathID(r.PathValue(name), name)
}

// PathIDs parses the ids in path segments names, in order, as PathID
// does.
func PathIDs(r *http.Request, names ...string) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, len(names))
	for i, name := range names {
		id, err := PathID(r, name)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// ParsePathID parses v, the value of path segment name, as PathID does.
func ParsePathID(v, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, apperr.E(apperr.NotFound, "%s not found", name)
	}
	return id, nil
}

// BodyIDs parses ids that passed the "id" validation; a failure here is
// still the caller's (422), never a 500.
func BodyIDs(field string, vs []string) ([]uuid.UUID, error) {
	ids := make([]uuid.UUID, len(vs))
	for i, v := range vs {
		id, err := uuid.Parse(v)
		if err != nil {
			return nil, &apperr.Error{Code: apperr.Invalid, Message: "some fields are not valid",
				Fields: map[string]string{fmt.Sprintf("%s[%d]", field, i): "must be a UUID"}}
		}
		ids[i] = id
	}
	return ids, nil
}
