// The JSON schema of a [Description] method's parameters, built the way AIFunctionFactory
// describes parameters (names, types, descriptions, defaults, required), on every runtime and
// whichever binder binds the method's arguments (SystemTextJson.cs, or the fallback Binder.cs).
using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Linq;
using System.Reflection;
using System.Text;

namespace Tether.Bridge
{
    public static class Schema
    {
        // The parameters object schema of one method; CancellationToken parameters are injected, not declared.
        public static string ForMethod(MethodInfo method)
        {
            var properties = new StringBuilder();
            var required = new List<string>();
            foreach (var parameter in method.GetParameters())
            {
                if (parameter.ParameterType == typeof(System.Threading.CancellationToken)) continue;
                if (properties.Length > 0) properties.Append(',');
                properties.Append(JsonWriter.Quote(parameter.Name)).Append(':');
                var extra = new List<string>();
                var description = Description(parameter);
                if (description != null) extra.Add("\"description\":" + JsonWriter.Quote(description));
                if (parameter.HasDefaultValue) extra.Add("\"default\":" + JsonWriter.Write(parameter.DefaultValue));
                else required.Add(JsonWriter.Quote(parameter.Name));
                properties.Append(ForType(parameter.ParameterType, extra, 0));
            }
            return "{\"type\":\"object\",\"properties\":{" + properties + "},\"required\":[" + string.Join(",", required.ToArray())
                + "],\"additionalProperties\":false}";
        }

        static string Description(ICustomAttributeProvider provider)
        {
            var attribute = provider.GetCustomAttributes(typeof(DescriptionAttribute), true).OfType<DescriptionAttribute>().FirstOrDefault();
            return attribute == null ? null : attribute.Description;
        }

        public static string DescriptionOf(MemberInfo member)
        {
            return Description(member);
        }

        static string ForType(Type type, List<string> extra, int depth)
        {
            var parts = new List<string>(extra ?? new List<string>());
            var underlying = Nullable.GetUnderlyingType(type);
            var nullable = underlying != null;
            if (nullable) type = underlying;
            string kind = null;
            if (type == typeof(string) || type == typeof(char)) kind = "string";
            else if (type == typeof(bool)) kind = "boolean";
            else if (type == typeof(int) || type == typeof(long) || type == typeof(short) || type == typeof(byte)
                     || type == typeof(uint) || type == typeof(ulong) || type == typeof(ushort) || type == typeof(sbyte)) kind = "integer";
            else if (type == typeof(double) || type == typeof(float) || type == typeof(decimal)) kind = "number";
            else if (type.IsEnum)
            {
                kind = "string";
                parts.Add("\"enum\":[" + string.Join(",", Enum.GetNames(type).Select(JsonWriter.Quote).ToArray()) + "]");
            }
            else if (type == typeof(DateTime) || type == typeof(DateTimeOffset)) { kind = "string"; parts.Add("\"format\":\"date-time\""); }
            else if (type == typeof(Guid)) { kind = "string"; parts.Add("\"format\":\"uuid\""); }
            else if (type == typeof(TimeSpan)) { kind = "string"; parts.Add("\"pattern\":\"^-?(\\\\d+\\\\.)?\\\\d{2}:\\\\d{2}:\\\\d{2}(\\\\.\\\\d{1,7})?$\""); }
            else if (type == typeof(object)) kind = null;
            else if (depth > 8) kind = null;
            else if (type.IsArray || SequenceElement(type) != null)
            {
                kind = "array";
                var element = type.IsArray ? type.GetElementType() : SequenceElement(type);
                parts.Add("\"items\":" + ForType(element, null, depth + 1));
            }
            else if (DictionaryValue(type) != null)
            {
                kind = "object";
                parts.Add("\"additionalProperties\":" + ForType(DictionaryValue(type), null, depth + 1));
            }
            else
            {
                kind = "object";
                var members = WritableMembers(type).OrderBy(m => m.Key, StringComparer.Ordinal);
                var properties = members.Select(m => JsonWriter.Quote(m.Key) + ":" + ForType(
                    m.Value is PropertyInfo ? ((PropertyInfo)m.Value).PropertyType : ((FieldInfo)m.Value).FieldType,
                    Description(m.Value) == null ? null : new List<string> { "\"description\":" + JsonWriter.Quote(Description(m.Value)) },
                    depth + 1));
                parts.Add("\"properties\":{" + string.Join(",", properties.ToArray()) + "}");
                parts.Add("\"additionalProperties\":false");
            }
            if (kind != null) parts.Insert(0, "\"type\":" + (nullable ? "[\"" + kind + "\",\"null\"]" : "\"" + kind + "\""));
            return "{" + string.Join(",", parts.ToArray()) + "}";
        }

        // The shapes of .NET types, shared by the schema and the fallback binder (Binder.cs).
        internal static Type SequenceElement(Type type)
        {
            if (!type.IsGenericType) return null;
            var definition = type.GetGenericTypeDefinition();
            if (definition == typeof(List<>) || definition == typeof(IList<>) || definition == typeof(IEnumerable<>)
                || definition == typeof(ICollection<>) || definition == typeof(IReadOnlyList<>) || definition == typeof(IReadOnlyCollection<>))
                return type.GetGenericArguments()[0];
            return null;
        }

        internal static Type DictionaryValue(Type type)
        {
            if (!type.IsGenericType) return null;
            var definition = type.GetGenericTypeDefinition();
            var arguments = type.GetGenericArguments();
            if ((definition == typeof(Dictionary<,>) || definition == typeof(IDictionary<,>) || definition == typeof(IReadOnlyDictionary<,>))
                && arguments[0] == typeof(string))
                return arguments[1];
            return null;
        }

        internal static Dictionary<string, MemberInfo> WritableMembers(Type type)
        {
            var members = new Dictionary<string, MemberInfo>(StringComparer.OrdinalIgnoreCase);
            foreach (var property in type.GetProperties(BindingFlags.Public | BindingFlags.Instance))
                if (property.CanWrite && property.GetSetMethod() != null && property.GetIndexParameters().Length == 0)
                    members[JsonWriter.CamelCase(property.Name)] = property;
            foreach (var field in type.GetFields(BindingFlags.Public | BindingFlags.Instance))
                if (!field.IsInitOnly) members[JsonWriter.CamelCase(field.Name)] = field;
            return members;
        }
    }
}
