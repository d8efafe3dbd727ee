// A small JSON reader and writer, because Mono ships no System.Text.Json and the
// bridge must not depend on the Microsoft.Extensions.AI packages being present.
// Values: null, bool, long or double, string, List<object>, Dictionary<string, object>.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Reflection;
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

        public static string Write(object value)
        {
            var output = new StringBuilder();
            WriteValue(output, value, 0);
            return output.ToString();
        }

        public static string Quote(string text)
        {
            var output = new StringBuilder();
            WriteString(output, text);
            return output.ToString();
        }

        // camelCase, as System.Text.Json's web defaults (and so AIFunctionFactory) name members.
        public static string CamelCase(string name)
        {
            if (string.IsNullOrEmpty(name) || !char.IsUpper(name[0])) return name;
            return char.ToLowerInvariant(name[0]) + name.Substring(1);
        }

        const int MaxDepth = 64;

        static void WriteValue(StringBuilder output, object value, int depth)
        {
            if (depth > MaxDepth) throw new InvalidOperationException("result nests deeper than " + MaxDepth + " levels (cycle?)");
            if (value == null || value is DBNull) { output.Append("null"); return; }
            var type = value.GetType();
            if (value is string) { WriteString(output, (string)value); return; }
            if (value is bool) { output.Append((bool)value ? "true" : "false"); return; }
            if (value is char) { WriteString(output, value.ToString()); return; }
            if (type.IsEnum) { WriteString(output, value.ToString()); return; }
            if (value is double || value is float)
            {
                var number = Convert.ToDouble(value, CultureInfo.InvariantCulture);
                if (double.IsNaN(number) || double.IsInfinity(number)) throw new InvalidOperationException("NaN and Infinity are not JSON");
                output.Append(number.ToString("R", CultureInfo.InvariantCulture));
                return;
            }
            if (value is decimal) { output.Append(((decimal)value).ToString(CultureInfo.InvariantCulture)); return; }
            if (type.IsPrimitive) { output.Append(Convert.ToString(value, CultureInfo.InvariantCulture)); return; }
            if (value is DateTime) { WriteString(output, ((DateTime)value).ToString("o", CultureInfo.InvariantCulture)); return; }
            if (value is DateTimeOffset) { WriteString(output, ((DateTimeOffset)value).ToString("o", CultureInfo.InvariantCulture)); return; }
            if (value is Guid || value is TimeSpan || value is Uri) { WriteString(output, Convert.ToString(value, CultureInfo.InvariantCulture)); return; }
            var raw = RawJson(value);
            if (raw != null) { output.Append(raw); return; }
            var dictionary = value as IDictionary;
            if (dictionary != null)
            {
                output.Append('{');
                var first = true;
                foreach (DictionaryEntry entry in dictionary)
                {
                    if (!first) output.Append(',');
                    first = false;
                    WriteString(output, Convert.ToString(entry.Key, CultureInfo.InvariantCulture));
                    output.Append(':');
                    WriteValue(output, entry.Value, depth + 1);
                }
                output.Append('}');
                return;
            }
            var pairs = value as IEnumerable<KeyValuePair<string, object>>;
            if (pairs != null)
            {
                output.Append('{');
                var first = true;
                foreach (var pair in pairs)
                {
                    if (!first) output.Append(',');
                    first = false;
                    WriteString(output, pair.Key);
                    output.Append(':');
                    WriteValue(output, pair.Value, depth + 1);
                }
                output.Append('}');
                return;
            }
            var sequence = value as IEnumerable;
            if (sequence != null)
            {
                output.Append('[');
                var first = true;
                foreach (var item in sequence)
                {
                    if (!first) output.Append(',');
                    first = false;
                    WriteValue(output, item, depth + 1);
                }
                output.Append(']');
                return;
            }
            output.Append('{');
            var firstMember = true;
            foreach (var property in type.GetProperties(BindingFlags.Public | BindingFlags.Instance))
            {
                if (!property.CanRead || property.GetIndexParameters().Length > 0) continue;
                if (!firstMember) output.Append(',');
                firstMember = false;
                WriteString(output, CamelCase(property.Name));
                output.Append(':');
                WriteValue(output, property.GetValue(value, null), depth + 1);
            }
            foreach (var field in type.GetFields(BindingFlags.Public | BindingFlags.Instance))
            {
                if (!firstMember) output.Append(',');
                firstMember = false;
                WriteString(output, CamelCase(field.Name));
                output.Append(':');
                WriteValue(output, field.GetValue(value), depth + 1);
            }
            output.Append('}');
        }

        // System.Text.Json's JsonElement / JsonNode, recognised by name so no reference is needed.
        static string RawJson(object value)
        {
            var name = value.GetType().FullName;
            if (name == "System.Text.Json.JsonElement")
                return (string)Reflected.RawText(value.GetType()).Invoke(value, null);
            if (name != null && name.StartsWith("System.Text.Json.Nodes.", StringComparison.Ordinal))
            {
                var toJson = value.GetType().GetMethod("ToJsonString", new[] { value.GetType().Assembly.GetType("System.Text.Json.JsonSerializerOptions") });
                if (toJson != null) return (string)toJson.Invoke(value, new object[] { null });
            }
            return null;
        }

        static void WriteString(StringBuilder output, string text)
        {
            output.Append('"');
            foreach (var c in text)
            {
                switch (c)
                {
                    case '"': output.Append("\\\""); break;
                    case '\\': output.Append("\\\\"); break;
                    case '\n': output.Append("\\n"); break;
                    case '\r': output.Append("\\r"); break;
                    case '\t': output.Append("\\t"); break;
                    case '\b': output.Append("\\b"); break;
                    case '\f': output.Append("\\f"); break;
                    default:
                        if (c < 0x20) output.Append("\\u").Append(((int)c).ToString("x4", CultureInfo.InvariantCulture));
                        else output.Append(c);
                        break;
                }
            }
            output.Append('"');
        }

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
                    if (c == '"') return output.ToString();
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
