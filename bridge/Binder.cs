// JSON values (as Json.Parse returns them) -> .NET parameter values, and the JSON
// schema that describes the same types, built the way AIFunctionFactory describes
// parameters: names, types, descriptions, defaults, required.
using System;
using System.Collections;
using System.Collections.Generic;
using System.ComponentModel;
using System.Globalization;
using System.Linq;
using System.Reflection;
using System.Text;

namespace Tether.Bridge
{
    public static class Binder
    {
        public static object Convert(object json, Type type, string path)
        {
            if (type == typeof(object)) return json;
            var underlying = Nullable.GetUnderlyingType(type);
            if (underlying != null) return json == null ? null : Convert(json, underlying, path);
            if (json == null)
            {
                if (!type.IsValueType) return null;
                throw Fail(path, "null is not a valid " + type.Name);
            }
            if (type == typeof(string))
            {
                if (json is string) return json;
                throw Fail(path, "expected a string");
            }
            if (type == typeof(bool))
            {
                if (json is bool) return json;
                throw Fail(path, "expected true or false");
            }
            if (type.IsEnum) return ConvertEnum(json, type, path);
            if (IsInteger(type))
            {
                try
                {
                    if (json is long) return System.Convert.ChangeType(json, type, CultureInfo.InvariantCulture);
                    if (json is double && Math.Floor((double)json) == (double)json)
                        return System.Convert.ChangeType(json, type, CultureInfo.InvariantCulture);
                }
                catch (OverflowException) { throw Fail(path, "number is out of range for " + type.Name); }
                throw Fail(path, "expected an integer");
            }
            if (type == typeof(double) || type == typeof(float) || type == typeof(decimal))
            {
                if (json is long || json is double) return System.Convert.ChangeType(json, type, CultureInfo.InvariantCulture);
                throw Fail(path, "expected a number");
            }
            if (type == typeof(DateTime) || type == typeof(DateTimeOffset) || type == typeof(Guid) || type == typeof(TimeSpan))
                return ConvertText(json, type, path);
            if (type.IsArray)
            {
                var items = AsList(json, path);
                var array = Array.CreateInstance(type.GetElementType(), items.Count);
                for (var i = 0; i < items.Count; i++) array.SetValue(Convert(items[i], type.GetElementType(), path + "[" + i + "]"), i);
                return array;
            }
            var element = SequenceElement(type);
            if (element != null)
            {
                var items = AsList(json, path);
                var list = (IList)Activator.CreateInstance(typeof(List<>).MakeGenericType(element));
                for (var i = 0; i < items.Count; i++) list.Add(Convert(items[i], element, path + "[" + i + "]"));
                return list;
            }
            var valueType = DictionaryValue(type);
            if (valueType != null)
            {
                var entries = AsObject(json, path);
                var dictionary = (IDictionary)Activator.CreateInstance(typeof(Dictionary<,>).MakeGenericType(typeof(string), valueType));
                foreach (var entry in entries) dictionary[entry.Key] = Convert(entry.Value, valueType, path + "." + entry.Key);
                return dictionary;
            }
            return ConvertObject(json, type, path);
        }

        static ArgumentBindingException Fail(string path, string message)
        {
            return new ArgumentBindingException(path + ": " + message);
        }

        static bool IsInteger(Type type)
        {
            return type == typeof(int) || type == typeof(long) || type == typeof(short) || type == typeof(byte)
                || type == typeof(uint) || type == typeof(ulong) || type == typeof(ushort) || type == typeof(sbyte);
        }

        static object ConvertEnum(object json, Type type, string path)
        {
            var text = json as string;
            if (text != null)
            {
                foreach (var name in Enum.GetNames(type))
                    if (string.Equals(name, text, StringComparison.OrdinalIgnoreCase)) return Enum.Parse(type, name);
                throw Fail(path, "'" + text + "' is not one of " + string.Join(", ", Enum.GetNames(type)));
            }
            if (json is long && Enum.IsDefined(type, System.Convert.ChangeType(json, Enum.GetUnderlyingType(type), CultureInfo.InvariantCulture)))
                return Enum.ToObject(type, json);
            throw Fail(path, "expected one of " + string.Join(", ", Enum.GetNames(type)));
        }

        static object ConvertText(object json, Type type, string path)
        {
            var text = json as string;
            if (text == null) throw Fail(path, "expected a string");
            try
            {
                if (type == typeof(DateTime)) return DateTime.Parse(text, CultureInfo.InvariantCulture, DateTimeStyles.RoundtripKind);
                if (type == typeof(DateTimeOffset)) return DateTimeOffset.Parse(text, CultureInfo.InvariantCulture);
                if (type == typeof(Guid)) return Guid.Parse(text);
                return TimeSpan.Parse(text, CultureInfo.InvariantCulture);
            }
            catch (FormatException) { throw Fail(path, "'" + text + "' is not a valid " + type.Name); }
        }

        static List<object> AsList(object json, string path)
        {
            var list = json as List<object>;
            if (list == null) throw Fail(path, "expected an array");
            return list;
        }

        static Dictionary<string, object> AsObject(object json, string path)
        {
            var entries = json as Dictionary<string, object>;
            if (entries == null) throw Fail(path, "expected an object");
            return entries;
        }

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

        static object ConvertObject(object json, Type type, string path)
        {
            var entries = AsObject(json, path);
            if (type.IsAbstract || type.IsInterface || (!type.IsValueType && type.GetConstructor(Type.EmptyTypes) == null))
                throw Fail(path, "cannot create a " + type.Name + " (it needs a public parameterless constructor)");
            var instance = Activator.CreateInstance(type);
            var members = WritableMembers(type);
            foreach (var entry in entries)
            {
                MemberInfo member;
                if (!members.TryGetValue(entry.Key, out member)) throw Fail(path, "unexpected property '" + entry.Key + "'");
                var property = member as PropertyInfo;
                if (property != null) property.SetValue(instance, Convert(entry.Value, property.PropertyType, path + "." + entry.Key), null);
                else ((FieldInfo)member).SetValue(instance, Convert(entry.Value, ((FieldInfo)member).FieldType, path + "." + entry.Key));
            }
            return instance;
        }

        internal static Dictionary<string, MemberInfo> WritableMembers(Type type)
        {
            var members = new Dictionary<string, MemberInfo>(StringComparer.OrdinalIgnoreCase);
            foreach (var property in type.GetProperties(BindingFlags.Public | BindingFlags.Instance))
                if (property.CanWrite && property.GetSetMethod() != null && property.GetIndexParameters().Length == 0)
                    members[Json.CamelCase(property.Name)] = property;
            foreach (var field in type.GetFields(BindingFlags.Public | BindingFlags.Instance))
                if (!field.IsInitOnly) members[Json.CamelCase(field.Name)] = field;
            return members;
        }
    }

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
                properties.Append(Json.Quote(parameter.Name)).Append(':');
                var extra = new List<string>();
                var description = Description(parameter);
                if (description != null) extra.Add("\"description\":" + Json.Quote(description));
                if (parameter.HasDefaultValue) extra.Add("\"default\":" + Json.Write(parameter.DefaultValue));
                else required.Add(Json.Quote(parameter.Name));
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
                parts.Add("\"enum\":[" + string.Join(",", Enum.GetNames(type).Select(Json.Quote).ToArray()) + "]");
            }
            else if (type == typeof(DateTime) || type == typeof(DateTimeOffset)) { kind = "string"; parts.Add("\"format\":\"date-time\""); }
            else if (type == typeof(Guid)) { kind = "string"; parts.Add("\"format\":\"uuid\""); }
            else if (type == typeof(TimeSpan)) { kind = "string"; parts.Add("\"pattern\":\"^-?(\\\\d+\\\\.)?\\\\d{2}:\\\\d{2}:\\\\d{2}(\\\\.\\\\d{1,7})?$\""); }
            else if (type == typeof(object)) kind = null;
            else if (depth > 8) kind = null;
            else if (type.IsArray || Binder.SequenceElement(type) != null)
            {
                kind = "array";
                var element = type.IsArray ? type.GetElementType() : Binder.SequenceElement(type);
                parts.Add("\"items\":" + ForType(element, null, depth + 1));
            }
            else if (Binder.DictionaryValue(type) != null)
            {
                kind = "object";
                parts.Add("\"additionalProperties\":" + ForType(Binder.DictionaryValue(type), null, depth + 1));
            }
            else
            {
                kind = "object";
                var members = Binder.WritableMembers(type).OrderBy(m => m.Key, StringComparer.Ordinal);
                var properties = members.Select(m => Json.Quote(m.Key) + ":" + ForType(
                    m.Value is PropertyInfo ? ((PropertyInfo)m.Value).PropertyType : ((FieldInfo)m.Value).FieldType,
                    Description(m.Value) == null ? null : new List<string> { "\"description\":" + Json.Quote(Description(m.Value)) },
                    depth + 1));
                parts.Add("\"properties\":{" + string.Join(",", properties.ToArray()) + "}");
                parts.Add("\"additionalProperties\":false");
            }
            if (kind != null) parts.Insert(0, "\"type\":" + (nullable ? "[\"" + kind + "\",\"null\"]" : "\"" + kind + "\""));
            return "{" + string.Join(",", parts.ToArray()) + "}";
        }
    }
}
