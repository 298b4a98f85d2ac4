package proc

import (
	"errors"
	"fmt"
	"testing"
)

func TestCleanLabel(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{in: "trainer.0/foo", want: "trainer_0_foo"},
		{in: "  GPU Worker  ", want: "gpu_worker"},
		{in: "make", want: "make"},
		{in: "a--b__c", want: "a--b__c"},
		{in: "a...b", want: "a_b"},
		{in: "__x__", want: "x"},
		{in: "-x-", wantErr: ErrInvalidLabel},
		{in: "x-", want: "x-"},
		{in: "a.b", want: "a_b"},
		{in: "--", wantErr: ErrInvalidLabel},
		{in: "-", wantErr: ErrInvalidLabel},
		{in: "_-_", wantErr: ErrInvalidLabel},
		{in: "..-x", wantErr: ErrInvalidLabel},
		{in: " --label ", wantErr: ErrInvalidLabel},
		{in: "x.-", want: "x_-"},
		{in: "_0", want: "0"},
		{in: "Übung 1", want: "bung_1"},
		{in: "日本 job", want: "job"},
		{in: "./bin/train.v2", want: "bin_train_v2"},
		{in: "", wantErr: ErrEmptyLabel},
		{in: "   ", wantErr: ErrEmptyLabel},
		{in: "./..", wantErr: ErrEmptyLabel},
		{in: "日本", wantErr: ErrEmptyLabel},
	}
	for _, tt := range tests {
		got, err := CleanLabel(tt.in)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("CleanLabel(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("CleanLabel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLabelFromCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{in: "/usr/bin/python3", want: "python3"},
		{in: "./bin/train.v2", want: "train_v2"},
		{in: "make", want: "make"},
		{in: "/opt/My Tool/Run.SH", want: "run_sh"},
		{in: "dir/", want: "dir"},
		{in: "/", wantErr: ErrEmptyLabel},
		{in: "", wantErr: ErrEmptyLabel},
		{in: "./...", wantErr: ErrEmptyLabel},
		{in: "./--", wantErr: ErrInvalidLabel},
		{in: "/opt/-x", wantErr: ErrInvalidLabel},
	}
	for _, tt := range tests {
		got, err := LabelFromCommand(tt.in)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("LabelFromCommand(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("LabelFromCommand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestLabelErrors checks the error's shape: every refusal is a *LabelError
// matching ErrInvalidLabel, whose message names the label and the rule, and
// a label that cleans to nothing matches ErrEmptyLabel too.
func TestLabelErrors(t *testing.T) {
	for _, in := range []string{"--", "", "./..", "-x"} {
		_, err := CleanLabel(in)
		var le *LabelError
		if !errors.As(err, &le) || le.Label != in || !errors.Is(err, ErrInvalidLabel) {
			t.Errorf("CleanLabel(%q) error = %#v", in, err)
			continue
		}
		if want := fmt.Sprintf("proc: label %q is not valid: %s", in, LabelRule); err.Error() != want {
			t.Errorf("CleanLabel(%q) error = %q, want %q", in, err, want)
		}
		if empty := errors.Is(err, ErrEmptyLabel); empty != (in == "" || in == "./..") {
			t.Errorf("CleanLabel(%q): errors.Is(ErrEmptyLabel) = %v", in, empty)
		}
	}
	// Idempotent, so that a rewrite is told by comparing.
	for _, in := range []string{"trainer.0/foo", "  GPU Worker  ", "a--b__c", "x.-"} {
		once, _ := CleanLabel(in)
		if twice, err := CleanLabel(once); err != nil || twice != once {
			t.Errorf("CleanLabel(CleanLabel(%q)) = %q, %v; want %q", in, twice, err, once)
		}
	}
	if got := CommandBase(" ./bin/train.v2 "); got != "train.v2" {
		t.Errorf("CommandBase = %q", got)
	}
}
