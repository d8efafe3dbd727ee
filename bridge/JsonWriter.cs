// The bridge's JSON writer, used on every path, with or without System.Text.Json: the results
// of [Description] methods (and scalars and JsonElements MEAI hands back), the parameter schemas
// Schema.cs builds, and FunctionCallContent arguments (Records.cs). System.Text.Json is not
// always there to write them (Mono without Microsoft.Extensions.AI), and one writer keeps a
// method's result the same JSON on every runtime.
// Values: null, bool, numbers, strings, enums (by name), dates, IDictionary, sequences,
// System.Text.Json elements and nodes (their raw text), other objects by their public
// properties and fields (camelCase names).
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Reflection;
using System.Text;

namespace Tether.Bridge
{
    public static class JsonWriter
    {
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
    }
}
