using System.Globalization;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Azure;

namespace Cerulean.Testing;

/// <summary>What a fault rule does when it fires (besides an optional <see cref="FaultRule.Delay"/>).</summary>
public enum FaultDrop
{
    /// <summary>Reset the connection without running the request.</summary>
    Before,

    /// <summary>Run the request (a write is committed), then reset the connection instead of answering.</summary>
    After,
}

/// <summary>One rule of <c>/_faults</c>: which requests it matches and what it does to them. Leave a
/// matcher null to match any. The action is an Azure error (<see cref="Status"/> and
/// <see cref="Code"/>), a dropped connection (<see cref="Drop"/>), or a <see cref="Delay"/> alone.
/// A rule holds inputs only; what the server reports about it is a <see cref="FaultRuleStatus"/>.</summary>
public sealed class FaultRule
{
    /// <summary>An operation as the access log names it: <c>InsertEntity</c>, <c>QueryEntities</c>,
    /// <c>Batch</c>, <c>CreateTable</c>, … (null or <c>*</c>: any).</summary>
    public string? Operation { get; set; }

    /// <summary>The table, in any case (null: any).</summary>
    public string? Table { get; set; }

    /// <summary>The entity's PartitionKey (null: any).</summary>
    public string? PartitionKey { get; set; }

    /// <summary>The HTTP status of the error to answer with, e.g. 503.</summary>
    public int? Status { get; set; }

    /// <summary>The Azure error code to answer with, e.g. <c>ServerBusy</c>.</summary>
    public string? Code { get; set; }

    /// <summary>Replaces the error's default message.</summary>
    public string? Message { get; set; }

    /// <summary>Drop the connection instead of answering.</summary>
    public FaultDrop? Drop { get; set; }

    /// <summary>Wait this long first (then do the above, or just run the request).</summary>
    public TimeSpan? Delay { get; set; }

    /// <summary>Fire on at most this many requests (null: no limit).</summary>
    public long? Count { get; set; }

    /// <summary>Let this many matching requests through first.</summary>
    public long? Skip { get; set; }

    /// <summary>Fire on each matching request with this probability, drawn from a generator seeded
    /// with <see cref="Seed"/>: the same requests fail on every run.</summary>
    public double? Probability { get; set; }

    /// <summary>The seed of <see cref="Probability"/> (default 0).</summary>
    public ulong? Seed { get; set; }

    /// <summary>A rule that answers <paramref name="operation"/> with an Azure error, e.g.
    /// <c>FaultRule.Error("InsertEntity", 503, "ServerBusy", count: 2)</c>.</summary>
    public static FaultRule Error(string operation, int status, string code, long? count = null) =>
        new() { Operation = operation, Status = status, Code = code, Count = count };

    internal JsonObject ToJson()
    {
        var j = new JsonObject();
        if (Operation != null) j["operation"] = Operation;
        if (Table != null) j["table"] = Table;
        if (PartitionKey != null) j["partitionKey"] = PartitionKey;
        if (Status != null) j["status"] = Status;
        if (Code != null) j["code"] = Code;
        if (Message != null) j["message"] = Message;
        if (Drop != null) j["drop"] = Drop == FaultDrop.Before ? "before" : "after";
        if (Delay != null) j["delayMs"] = (long)Delay.Value.TotalMilliseconds;
        if (Count != null) j["count"] = Count;
        if (Skip != null) j["skip"] = Skip;
        if (Probability != null) j["probability"] = Probability;
        if (Seed != null) j["seed"] = Seed;
        return j;
    }

    internal static FaultRule FromJson(JsonNode j) => new()
    {
        Operation = (string?)j["operation"],
        Table = (string?)j["table"],
        PartitionKey = (string?)j["partitionKey"],
        Status = (int?)j["status"],
        Code = (string?)j["code"],
        Message = (string?)j["message"],
        Drop = (string?)j["drop"] switch { "before" => FaultDrop.Before, "after" => FaultDrop.After, _ => null },
        Delay = j["delayMs"] is JsonNode d ? TimeSpan.FromMilliseconds((long)d) : null,
        Count = (long?)j["count"],
        Skip = (long?)j["skip"],
        Probability = (double?)j["probability"],
        Seed = (ulong?)j["seed"],
    };
}

/// <summary>A fault rule as the server lists it: the rule, its account, and its counters.</summary>
/// <param name="Rule">The rule as set.</param>
/// <param name="Account">The account whose requests it matches.</param>
/// <param name="Matched">Requests that matched it while it could still fire.</param>
/// <param name="Fired">Requests it acted on.</param>
public sealed record FaultRuleStatus(FaultRule Rule, string Account, long Matched, long Fired)
{
    internal static FaultRuleStatus FromJson(JsonNode j) =>
        new(FaultRule.FromJson(j), (string?)j["account"] ?? "", (long?)j["matched"] ?? 0, (long?)j["fired"] ?? 0);
}

/// <summary>A saved snapshot of the account: its name, when it was saved, and what it holds.</summary>
public sealed record SnapshotInfo(string Name, DateTimeOffset Created, long Tables, long Entities);

/// <summary>What a restore did: tables left as they were, patched row by row, or copied whole.</summary>
public sealed record SnapshotRestoreResult(
    string Name, long TablesKept, long TablesPatched, long TablesCopied, long EntitiesCopied);

/// <summary>Calls the server's reserved <c>/_reset</c>, <c>/_snapshots</c> and <c>/_faults</c>
/// endpoints, each signed with Shared Key (the full scheme; Shared Key Lite is refused there).
/// Thread-safe.</summary>
internal sealed class AdminClient : IDisposable
{
    readonly HttpClient _http;
    readonly string _account;
    readonly byte[] _key;

    public AdminClient(Uri serviceUri, string account, string base64Key)
    {
        _http = new HttpClient { BaseAddress = serviceUri, Timeout = TimeSpan.FromSeconds(100) };
        _account = account;
        _key = Convert.FromBase64String(base64Key);
    }

    public void Dispose() => _http.Dispose();

    /// <summary>Sends one signed request; returns the parsed JSON body (null when empty).</summary>
    /// <exception cref="RequestFailedException">the server answered with an error.</exception>
    public async Task<JsonNode?> SendAsync(HttpMethod method, string path, JsonNode? body, CancellationToken ct)
    {
        using var request = new HttpRequestMessage(method, path);
        string contentType = "";
        if (body != null)
        {
            contentType = "application/json";
            request.Content = new ByteArrayContent(Encoding.UTF8.GetBytes(body.ToJsonString()));
            request.Content.Headers.ContentType = new MediaTypeHeaderValue(contentType);
        }
        string date = DateTimeOffset.UtcNow.ToString("R", CultureInfo.InvariantCulture);
        request.Headers.Add("x-ms-date", date);
        request.Headers.Add("x-ms-version", "2019-02-02");
        // Shared Key, Table service form: VERB, Content-MD5, Content-Type, Date, then the
        // canonicalized resource "/{account}{path}" (the path as sent, no query here).
        string stringToSign = $"{method.Method}\n\n{contentType}\n{date}\n/{_account}{path}";
        using var hmac = new HMACSHA256(_key);
        string signature = Convert.ToBase64String(hmac.ComputeHash(Encoding.UTF8.GetBytes(stringToSign)));
        request.Headers.TryAddWithoutValidation("Authorization", $"SharedKey {_account}:{signature}");

        using HttpResponseMessage response = await _http.SendAsync(request, ct).ConfigureAwait(false);
        string text = await response.Content.ReadAsStringAsync(ct).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
        {
            string? code = response.Headers.TryGetValues("x-ms-error-code", out var codes) ? codes.FirstOrDefault() : null;
            string message = text;
            try
            {
                message = (string?)JsonNode.Parse(text)?["odata.error"]?["message"]?["value"] ?? text;
            }
            catch (JsonException)
            {
            }
            throw new RequestFailedException((int)response.StatusCode,
                $"{method.Method} {path}: {(int)response.StatusCode} {code}: {message}", code, null);
        }
        return text.Length == 0 ? null : JsonNode.Parse(text);
    }
}
