// The fallback JSON reader: it parses the arguments of a [Description] method (DescribedFunction
// in Functions.cs), for the fallback binder (Binder.cs), only where the runtime has no
// System.Text.Json: on Mono without Microsoft.Extensions.AI. Mono ships no System.Text.Json; it
// loads one from a probe folder (AssemblyProbe.cs) once one holds it: load_meai() registers
// TETHER_MEAI_DIR, load_assembly() a tool's own folder. Wherever System.Text.Json loads (always on
// CoreCLR, and for every AIFunction) arguments are parsed by it instead (SystemTextJson.cs) and
// this file is not used. It exists so that plain [Description] tools work on a bare Mono.
// Values: null, bool, long or double, string, List<object>, Dictionary<string, object>.
// Strict JSON, as System.Text.Json reads it: a property name given twice, nesting deeper than 64,
// a raw control character or a lone surrogate in a string is a FormatException.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Tether.Bridge
{
    public static class Json
    {
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            var reader = new Reader(text);
            reader.SkipSpace();
            var value = reader.ReadValue(0);
            reader.SkipSpace();
            if (!reader.AtEnd) throw reader.Error("unexpected text after the JSON value");
            return value;
        }

        const int MaxDepth = 64;

        sealed class Reader
        {
            readonly string _text;
            int _at;

            public Reader(string text) { _text = text; }

            public bool AtEnd { get { return _at >= _text.Length; } }

            public FormatException Error(string message)
            {
                return new FormatException("invalid JSON at offset " + _at + ": " + message);
            }

            public void SkipSpace()
            {
                while (_at < _text.Length && (_text[_at] == ' ' || _text[_at] == '\t' || _text[_at] == '\n' || _text[_at] == '\r')) _at++;
            }

            public object ReadValue(int depth)
            {
                if (depth > MaxDepth) throw Error("nesting too deep");
                if (AtEnd) throw Error("unexpected end");
                var c = _text[_at];
                if (c == '{') return ReadObject(depth);
                if (c == '[') return ReadArray(depth);
                if (c == '"') return ReadString();
                if (c == 't') { Expect("true"); return true; }
                if (c == 'f') { Expect("false"); return false; }
                if (c == 'n') { Expect("null"); return null; }
                return ReadNumber();
            }

            void Expect(string word)
            {
                if (string.CompareOrdinal(_text, _at, word, 0, word.Length) != 0) throw Error("expected " + word);
                _at += word.Length;
            }

            Dictionary<string, object> ReadObject(int depth)
            {
                var result = new Dictionary<string, object>(StringComparer.Ordinal);
                _at++;
                SkipSpace();
                if (!AtEnd && _text[_at] == '}') { _at++; return result; }
                while (true)
                {
                    SkipSpace();
                    if (AtEnd || _text[_at] != '"') throw Error("expected a property name");
                    var key = ReadString();
                    SkipSpace();
                    if (AtEnd || _text[_at] != ':') throw Error("expected ':'");
                    _at++;
                    SkipSpace();
                    if (result.ContainsKey(key)) throw Error("duplicate property '" + key + "'");
                    result[key] = ReadValue(depth + 1);
                    SkipSpace();
                    if (AtEnd) throw Error("unterminated object");
                    if (_text[_at] == ',') { _at++; continue; }
                    if (_text[_at] == '}') { _at++; return result; }
                    throw Error("expected ',' or '}'");
                }
            }

            List<object> ReadArray(int depth)
            {
                var result = new List<object>();
                _at++;
                SkipSpace();
                if (!AtEnd && _text[_at] == ']') { _at++; return result; }
                while (true)
                {
                    SkipSpace();
                    result.Add(ReadValue(depth + 1));
                    SkipSpace();
                    if (AtEnd) throw Error("unterminated array");
                    if (_text[_at] == ',') { _at++; continue; }
                    if (_text[_at] == ']') { _at++; return result; }
                    throw Error("expected ',' or ']'");
                }
            }

            string ReadString()
            {
                var output = new StringBuilder();
                _at++;
                while (true)
                {
                    if (AtEnd) throw Error("unterminated string");
                    var c = _text[_at++];
                    if (c == '"') return WellFormed(output.ToString());
                    if (c < ' ') throw Error("a control character in a string must be escaped");
                    if (c != '\\') { output.Append(c); continue; }
                    if (AtEnd) throw Error("unterminated escape");
                    var e = _text[_at++];
                    switch (e)
                    {
                        case '"': output.Append('"'); break;
                        case '\\': output.Append('\\'); break;
                        case '/': output.Append('/'); break;
                        case 'b': output.Append('\b'); break;
                        case 'f': output.Append('\f'); break;
                        case 'n': output.Append('\n'); break;
                        case 'r': output.Append('\r'); break;
                        case 't': output.Append('\t'); break;
                        case 'u':
                            if (_at + 4 > _text.Length) throw Error("short \\u escape");
                            output.Append((char)int.Parse(_text.Substring(_at, 4), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                            _at += 4;
                            break;
                        default: throw Error("bad escape");
                    }
                }
            }

            // A string must be valid UTF-16, as System.Text.Json requires: a surrogate (escaped or not)
            // only as half of a pair. (One that reached a tool would come back in its result, and no
            // Python str can hold it.)
            string WellFormed(string value)
            {
                for (var i = 0; i < value.Length; i++)
                {
                    if (char.IsHighSurrogate(value[i]) && i + 1 < value.Length && char.IsLowSurrogate(value[i + 1])) { i++; continue; }
                    if (char.IsSurrogate(value[i])) throw Error("a lone surrogate in a string");
                }
                return value;
            }

            object ReadNumber()
            {
                var start = _at;
                while (_at < _text.Length && "+-0123456789.eE".IndexOf(_text[_at]) >= 0) _at++;
                var token = _text.Substring(start, _at - start);
                if (token.Length == 0) throw Error("unexpected character");
                long integer;
                if (token.IndexOfAny(new[] { '.', 'e', 'E' }) < 0 && long.TryParse(token, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out integer))
                    return integer;
                double real;
                if (double.TryParse(token, NumberStyles.Float, CultureInfo.InvariantCulture, out real)) return real;
                throw Error("bad number '" + token + "'");
            }
        }
    }
}
