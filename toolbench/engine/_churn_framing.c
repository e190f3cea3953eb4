/* Where an HTTP/1.x response ends (RFC 9112 section 6.3), held to what llhttp accepts so that
   the C and Python paths count the same: HEAD, 1xx, 204 and 304 have no body; chunked;
   Content-Length; otherwise (or another coding last) the close ends the body. Not HTTP/x.y, a
   bare LF, a header name that is not a token, a duplicate Content-Length, a length together with
   a Transfer-Encoding, or a bad chunk line is malformed. With keep-alive, whether the connection
   can carry the next request is llhttp's should_keep_alive (Connection tokens, the version). */
#include "_churn_framing.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void framing_reset(Framing *f) {
    f->pstate = P_HEAD;
    f->code = f->final_code = 0;
    f->checked = f->line_start = f->line_no = f->colon = 0;
    f->remaining = 0;
    f->has_length = f->chunked = f->until_close = 0;
    f->v11 = f->conn_close = f->conn_keep = f->keep_alive = 0;
    f->unread = 0;
    f->len = 0;
}

void framing_free(Framing *f) {
    free(f->buf);
    f->buf = NULL;
    f->len = f->cap = 0;
}

int framing_ends_at_close(const Framing *f) { return f->pstate == P_BODY_EOF; }

/* Appends to the line buffer; -1 when it would outgrow HEAD_MAX. */
static int keep(Framing *f, const char *p, size_t n) {
    if (f->len + n > HEAD_MAX) return -1;
    if (f->len + n > f->cap) {
        size_t cap = f->cap ? f->cap : 1024;
        while (cap < f->len + n) cap *= 2;
        char *grown = realloc(f->buf, cap);
        if (grown == NULL) return -1;
        f->buf = grown;
        f->cap = cap;
    }
    memcpy(f->buf + f->len, p, n);
    f->len += n;
    return 0;
}

/* A Connection (or Proxy-Connection, as llhttp reads it) value's tokens: close and keep-alive. */
static void connection_tokens(Framing *f, const char *v, size_t n) {
    const char *end = v + n;
    while (v < end) {
        const char *comma = memchr(v, ',', (size_t)(end - v)), *stop = comma ? comma : end;
        const char *a = v, *b = stop;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        if (b - a == 5 && strncasecmp(a, "close", 5) == 0) f->conn_close = 1;
        if (b - a == 10 && strncasecmp(a, "keep-alive", 10) == 0) f->conn_keep = 1;
        v = comma ? comma + 1 : end;
    }
}

/* RFC 9110's tchar: a visible character but "(),/:;<=>?@[\]{}. */
static const unsigned char TCHAR[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* The status line's first 13 bytes: "HTTP/d.d ddd" and a space or the CR. */
static int status_char_ok(size_t col, char ch) {
    if (col < 5) return ch == "HTTP/"[col];
    if (col == 5 || col == 7 || (col >= 9 && col <= 11)) return ch >= '0' && ch <= '9';
    if (col == 6) return ch == '.';
    if (col == 8) return ch == ' ';
    return ch == ' ' || ch == '\r';
}

static int is_name(const char *line, size_t n, const char *name, size_t k) {
    return n == k && strncasecmp(line, name, k) == 0;
}

/* One whole line of the head, without its CRLF: the status line's version and status, or a
   header that frames the response. 0, or -1 if malformed, as llhttp would say. */
static int head_line(Framing *f, const char *line, size_t n) {
    if (f->line_no == 0) {
        f->code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
        f->has_length = f->chunked = f->until_close = f->conn_close = f->conn_keep = 0;
        f->v11 = line[5] > '0' && line[7] > '0'; /* llhttp: major > 0 and minor > 0 (HTTP/2.0 reads as 1.0) */
        return f->code < 100 ? -1 : 0;
    }
    size_t k = f->colon_at;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t vlen = (size_t)(end - v);
    if (is_name(line, k, "content-length", 14)) {
        if (vlen == 0 || vlen > 18 || f->has_length) return -1; /* a duplicate, even an equal one */
        int64_t length = 0;
        for (size_t d = 0; d < vlen; d++) {
            if (v[d] < '0' || v[d] > '9') return -1;
            length = length * 10 + (v[d] - '0');
        }
        f->has_length = 1;
        f->remaining = length;
    } else if (is_name(line, k, "transfer-encoding", 17)) {
        f->chunked = vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0;
        f->until_close = !f->chunked; /* another coding last: the close ends the body */
    } else if (is_name(line, k, "connection", 10) || is_name(line, k, "proxy-connection", 16)) {
        connection_tokens(f, v, vlen);
    }
    return 0;
}

/* Reads the head's bytes [f->checked, n) as they arrive, as llhttp does byte by byte (the
   status line's form, a token before each header's colon, CRLF line ends), and each line once
   whole (head_line). Returns the head's length once its empty line is read, 0 while it is not
   whole, -1 if malformed. Resumes where it stopped, so a head that arrives a byte at a time is
   read once. */
static long scan_head(Framing *f, const char *h, size_t n) {
    size_t k = f->checked;
    while (k < n) {
        size_t col = k - f->line_start;
        if (f->line_no == 0 && col < 13) {
            if (!status_char_ok(col, h[k])) return -1;
            k++;
            continue;
        }
        if (f->line_no > 0 && !f->colon) { /* a header's name */
            while (k < n && TCHAR[(unsigned char)h[k]]) k++;
            if (k == n) break;
            col = k - f->line_start;
            if (h[k] == ':') {
                if (col == 0) return -1;
                f->colon = 1;
                f->colon_at = col;
                k++;
                continue;
            }
            if (h[k] == '\r' && col == 0) { /* the empty line's, or so llhttp lets it be */
                k++;
                continue;
            }
            if (h[k] != '\n') return -1;
        } else { /* a header's value, or the status line's reason: nothing to check up to its LF */
            const char *lf = memchr(h + k, '\n', n - k);
            if (lf == NULL) break;
            k = (size_t)(lf - h);
            col = k - f->line_start;
        }
        if (k == 0 || h[k - 1] != '\r') return -1; /* a bare LF */
        if (f->line_no > 0 && !f->colon) {
            if (col != 1) return -1; /* a header line without a colon */
            f->checked = k + 1;
            return (long)(k + 1);
        }
        if (head_line(f, h + f->line_start, col - 1) < 0) return -1;
        f->line_start = ++k;
        f->line_no++;
        f->colon = 0;
    }
    f->checked = n;
    return 0;
}

/* The state after a head: 1 if the response is complete, 0 if a body follows. */
static int after_head(Framing *f, int head_request) {
    f->checked = f->line_start = f->line_no = f->colon = 0; /* for the next head, after an interim one */
    if (f->code < 200) { /* interim: the real response follows */
        f->pstate = P_HEAD;
        return 0;
    }
    f->final_code = f->code;
    /* llhttp_should_keep_alive, asked at the end of the response (for HEAD: at its head, before
       llhttp knows to skip a body, so a head with neither length nor chunked closes there too). */
    int needs_eof = f->code != 204 && f->code != 304 && (f->until_close || !(f->has_length || f->chunked));
    f->keep_alive = (f->v11 ? !f->conn_close : f->conn_keep) && !needs_eof;
    if (head_request || f->code == 204 || f->code == 304) return 1;
    if (f->chunked) f->pstate = P_CHUNK_SIZE;
    else if (f->has_length && !f->until_close) f->pstate = P_BODY_LEN;
    else f->pstate = P_BODY_EOF;
    return f->pstate == P_BODY_LEN && f->remaining == 0;
}

static int chunk_line(Framing *f, const char *line, size_t n) {
    while (n && (line[n - 1] == '\r')) n--;
    if (f->pstate == P_CHUNK_END) {
        if (n) return -1;
        f->pstate = P_CHUNK_SIZE;
        return 0;
    }
    if (f->pstate == P_TRAILER) return n == 0 ? 1 : 0;
    int64_t size = 0;
    size_t k = 0;
    for (; k < n && k < 15; k++) { /* 15 hex digits at most: no overflow */
        char ch = line[k];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) break;
        size = size * 16 + d;
    }
    if (k == 0 || (k < n && line[k] != ';')) return -1; /* llhttp: an extension follows at once */
    f->remaining = size;
    f->pstate = size ? P_CHUNK_DATA : P_TRAILER;
    return 0;
}

/* llhttp judges a chunk line byte by byte: a part of one that no end can make valid (a space
   after the size, data where the CRLF after a chunk belongs) is malformed now, as it is there,
   not once its end arrives. */
static int partial_line_ok(const Framing *f) {
    const char *line = f->buf;
    size_t n = f->len, k = 0;
    if (f->pstate == P_CHUNK_END) return n == 0 || (n == 1 && line[0] == '\r');
    if (f->pstate != P_CHUNK_SIZE) return 1;
    for (; k < n && k < 15; k++) {
        char ch = line[k];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F'))) break;
    }
    if (k == n) return 1;
    if (k == 0) return 0;
    return line[k] == ';' || (line[k] == '\r' && k + 1 == n);
}

/* The response is complete, with `n` bytes of the read after it. */
static int complete(Framing *f, size_t n) {
    f->unread = n;
    return 1;
}

int framing_feed(Framing *f, int head_request, const char *p, size_t n) {
    f->unread = 0;
    while (n) {
        switch (f->pstate) {
        case P_HEAD: {
            size_t had = f->len, used;
            long end;
            if (had == 0 && (end = scan_head(f, p, n)) != 0) { /* the usual case: the whole head in this read */
                if (end < 0) return -1;
                used = (size_t)end;
            } else { /* a head that spans reads: kept until its end arrives */
                size_t take = n < HEAD_MAX - had ? n : HEAD_MAX - had;
                if (keep(f, p, take) < 0) return -1;
                end = scan_head(f, f->buf, f->len);
                if (end < 0) return -1;
                if (end == 0) return take < n ? -1 : 0; /* a head longer than HEAD_MAX */
                used = (size_t)end - had;
                f->len = 0;
            }
            if (f->has_length && (f->chunked || f->until_close)) return -1; /* both: a smuggler's answer */
            p += used;
            n -= used;
            if (after_head(f, head_request)) return complete(f, n);
            continue;
        }
        case P_BODY_LEN:
        case P_CHUNK_DATA: {
            size_t take = (int64_t)n < f->remaining ? n : (size_t)f->remaining;
            f->remaining -= take;
            p += take;
            n -= take;
            if (f->remaining == 0) {
                if (f->pstate == P_BODY_LEN) return complete(f, n);
                f->pstate = P_CHUNK_END;
            }
            continue;
        }
        case P_BODY_EOF:
            return 0; /* the close ends it */
        default: { /* a chunk's size line, the CRLF after its data, or a trailer line */
            const char *eol = memchr(p, '\n', n);
            size_t take = eol ? (size_t)(eol - p) + 1 : n;
            if (keep(f, p, take) < 0) return -1;
            p += take;
            n -= take;
            if (eol == NULL) return partial_line_ok(f) ? 0 : -1;
            int rc = chunk_line(f, f->buf, f->len - 1);
            f->len = 0;
            if (rc) return rc < 0 ? rc : complete(f, n);
        }
        }
    }
    return 0;
}

